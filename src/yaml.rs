//! YAML errors in this project's words: the YAML library's user-facing message (what is
//! wrong, at which line and column), never its developer hints (e.g. which parser option
//! would accept a duplicate key) or source snippets.

/// The message for a YAML error, for a caller that names the file.
pub fn message(e: &serde_saphyr::Error) -> String {
    e.render_with_options(serde_saphyr::render_options! {
        formatter: &serde_saphyr::UserMessageFormatter,
        snippets: serde_saphyr::SnippetMode::Off,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_duplicate_key_is_named_without_the_librarys_hint() {
        let e = serde_saphyr::from_str::<serde_json::Value>("name: a\nname: b\n").unwrap_err();
        let m = super::message(&e);
        assert!(m.contains("duplicate mapping key `name`"), "{m}");
        assert!(m.contains("line 2"), "{m}");
        assert!(
            !m.contains("DuplicateKeyPolicy") && !m.contains("<input>"),
            "{m}"
        );
    }
}
