//! "Did you mean …" for mistyped names on the command line.

/// ` (did you mean `x`?)` naming the closest candidate, or an empty string when none is
/// close enough to be a likely typo.
pub fn did_you_mean<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(typed, candidates).map_or(String::new(), |c| format!(" (did you mean `{c}`?)"))
}

/// The candidate closest to `typed` by Jaro–Winkler similarity, when it is at least 0.8
/// (close enough that the typo reading is the likely one).
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&typed, &c.to_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = ["banking", "slack", "travel", "workspace"];
        assert_eq!(closest("bankng", names), Some("banking"));
        assert_eq!(closest("Slak", names), Some("slack"));
        assert_eq!(closest("zzz", names), None);
        assert_eq!(did_you_mean("travle", names), " (did you mean `travel`?)");
        assert_eq!(did_you_mean("qqqq", names), "");
    }
}
