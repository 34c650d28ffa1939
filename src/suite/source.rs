//! A suite file's source text, read through the YAML parser's events rather than as
//! data: where each value sits (file line, for errors on values the loader checks), and
//! the comments that cut a plain scalar short.
//!
//! In plain YAML ` #` starts a comment, so `prompt: Post it in #general.` is the prompt
//! "Post it in" and the rest is silently dropped. The rule here: in a suite file, no
//! comment may follow a plain scalar that YAML reads as text, on its line or indented as
//! its continuation below it. Quote the value, or put the comment on a line of its own
//! at the key's indentation. Numbers, booleans and nulls may carry a trailing comment:
//! they cannot lose words to it.

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, StructureStyle};
use std::collections::BTreeMap;

/// A plain scalar that loses text to a comment.
#[derive(Clone, Debug, PartialEq)]
pub struct Cut {
    /// 1-based line of the comment.
    pub line: usize,
    /// Where the value sits, as `tasks[3].prompt`.
    pub path: String,
    /// The value as YAML reads it.
    pub kept: String,
    /// The comment's text after `#`, which the author probably meant as part of it.
    pub lost: String,
}

/// What a scan of one file found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Path → (1-based line, text) of every scalar value.
    values: BTreeMap<String, (usize, String)>,
    /// Every plain scalar that loses text to a comment, in file order.
    pub cuts: Vec<Cut>,
    /// The files named by `!include` tags, as written.
    pub includes: Vec<String>,
}

enum Frame {
    Map {
        key: Option<String>,
        key_col: usize,
        expecting_key: bool,
    },
    Seq {
        next: usize,
        flow: bool,
    },
}

/// The last scalar value read, while a comment may still follow it.
struct Pending {
    path: String,
    kept: String,
    end_line: usize,
    /// Column a continuation line of the scalar must pass: its key's, or its `-`'s.
    owner_col: usize,
}

/// Whether YAML's core schema reads a plain scalar as text (not null, bool or number).
pub fn reads_as_text(plain: &str) -> bool {
    let s = plain.trim();
    let special = matches!(
        s,
        "" | "~"
            | "null"
            | "Null"
            | "NULL"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | ".inf"
            | "-.inf"
            | "+.inf"
            | ".Inf"
            | ".INF"
            | ".nan"
            | ".NaN"
            | ".NAN"
    );
    let radix = |p: &str, r: u32| {
        s.strip_prefix(p)
            .is_some_and(|d| i64::from_str_radix(d, r).is_ok())
    };
    !(special || s.parse::<f64>().is_ok() || radix("0x", 16) || radix("0o", 8))
}

fn path_of(stack: &[Frame]) -> String {
    let mut out = String::new();
    for f in stack {
        match f {
            Frame::Map { key: Some(k), .. } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Frame::Map { key: None, .. } => {}
            Frame::Seq { next, .. } => out.push_str(&format!("[{next}]")),
        }
    }
    out
}

/// A node ended: its parent moves on to its next key or item.
fn advance(stack: &mut [Frame]) {
    match stack.last_mut() {
        Some(Frame::Map { expecting_key, .. }) => *expecting_key = true,
        Some(Frame::Seq { next, .. }) => *next += 1,
        None => {}
    }
}

/// The column a continuation of a value starting at (`line`, `col`) must pass.
fn owner_col(stack: &[Frame], lines: &[&str], line: usize, col: usize) -> usize {
    match stack.last() {
        Some(Frame::Map { key_col, .. }) => *key_col,
        Some(Frame::Seq { flow: true, .. }) => usize::MAX,
        Some(Frame::Seq { flow: false, .. }) => lines
            .get(line.saturating_sub(1))
            .and_then(|l| {
                let before: String = l.chars().take(col).collect();
                before.rfind('-').map(|b| before[..b].chars().count())
            })
            .unwrap_or(col.saturating_sub(1)),
        None => 0,
    }
}

/// Reads `text`'s events. A syntax error ends the scan quietly: the YAML loader reports
/// it with its own line.
pub fn scan(text: &str) -> Scan {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Scan::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending: Option<Pending> = None;
    for event in Parser::new_from_str(text) {
        let Ok((event, span)) = event else { break };
        let (line, col) = (span.start.line(), span.start.col());
        match event {
            Event::Comment(lost, _) => {
                if let Some(p) = &pending {
                    let continues = line == p.end_line || col > p.owner_col;
                    if continues {
                        out.cuts.push(Cut {
                            line,
                            path: p.path.clone(),
                            kept: p.kept.clone(),
                            lost: lost.trim().to_string(),
                        });
                    }
                }
                continue;
            }
            Event::Scalar(value, style, _, tag) => {
                if let Some(Frame::Map {
                    key,
                    key_col,
                    expecting_key: expecting @ true,
                }) = stack.last_mut()
                {
                    *key = Some(value.into_owned());
                    *key_col = col;
                    *expecting = false;
                    pending = None;
                    continue;
                }
                let path = path_of(&stack);
                if tag.as_ref().is_some_and(|t| t.suffix() == "include") {
                    out.includes.push(value.to_string());
                }
                pending = (style == ScalarStyle::Plain && reads_as_text(&value)).then(|| Pending {
                    path: path.clone(),
                    kept: value.to_string(),
                    end_line: span.end.line(),
                    owner_col: owner_col(&stack, &lines, line, col),
                });
                out.values.insert(path, (line, value.into_owned()));
                advance(&mut stack);
                continue;
            }
            Event::MappingStart(..) => stack.push(Frame::Map {
                key: None,
                key_col: col,
                expecting_key: true,
            }),
            Event::SequenceStart(style, ..) => stack.push(Frame::Seq {
                next: 0,
                flow: style == StructureStyle::Flow,
            }),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                advance(&mut stack);
            }
            Event::Alias(_) => advance(&mut stack),
            _ => {}
        }
        pending = None;
    }
    out
}

impl Scan {
    /// The 1-based line of the value at `path` (`tasks[3].prompt`).
    pub fn line(&self, path: &str) -> Option<usize> {
        self.values.get(path).map(|(line, _)| *line)
    }

    /// The text of the scalar at `path`.
    pub fn value(&self, path: &str) -> Option<&str> {
        self.values.get(path).map(|(_, v)| v.as_str())
    }

    /// Names the item and field a path points into: `tasks[3].plan[0].args.subject` is
    /// field `plan[0].args.subject` of the task whose `id` is at `tasks[3].id` (a sample,
    /// which has no id, is `<user_task>/<class>` as everywhere else). A path outside a
    /// top-level list names no item.
    pub fn locate(&self, path: &str) -> (Option<String>, String) {
        let Some(open) = path.find('[') else {
            return (None, path.to_string());
        };
        let Some(close) = path[open..].find(']').map(|c| open + c) else {
            return (None, path.to_string());
        };
        if path[..open].contains('.') {
            return (None, path.to_string());
        }
        let item = &path[..=close];
        let field = path[close + 1..].trim_start_matches('.').to_string();
        let name = self
            .value(&format!("{item}.id"))
            .map(str::to_string)
            .or_else(|| {
                let user = self.value(&format!("{item}.user_task"))?;
                let class = self.value(&format!("{item}.class"))?;
                Some(format!("{user}/{class}"))
            })
            .unwrap_or_else(|| item.to_string());
        (Some(name), field)
    }
}

/// Whether `text` is a complete sentence, or several: it starts with a capital letter,
/// a digit or an opening quote or bracket, and ends with `.`, `?` or `!` (a closing
/// quote or bracket may follow). A prompt cut short by a comment, or left unfinished,
/// fails; the reason says what is wrong.
pub fn complete_sentence(text: &str) -> Result<(), SentenceError> {
    let t = text.trim();
    let Some(first) = t.chars().next() else {
        return Err(SentenceError::Empty);
    };
    if !(first.is_uppercase() || first.is_ascii_digit() || "\"'“‘([".contains(first)) {
        return Err(SentenceError::BadStart { text: t.into() });
    }
    let end = t.trim_end_matches(['"', '\'', '”', '’', ')', ']']);
    if !end.ends_with(['.', '?', '!']) {
        return Err(SentenceError::BadEnd { text: t.into() });
    }
    Ok(())
}

/// Why a prompt or goal is not a complete sentence ([`complete_sentence`]); `text` is the
/// trimmed text, shown by its start or its end when long.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SentenceError {
    #[error("is empty")]
    Empty,
    /// It opens with something else than a capital letter, a digit or a quote.
    #[error(
        "`{}` does not start a sentence (a capital letter, a digit or a quote)",
        ellipsis(.text, true)
    )]
    BadStart { text: String },
    /// It does not end with `.`, `?` or `!`: cut short, or never finished.
    #[error(
        "`{}` does not end a sentence (`.`, `?` or `!`): is it cut short?",
        ellipsis(.text, false)
    )]
    BadEnd { text: String },
}

/// The start or the end of a long text, for messages.
fn ellipsis(t: &str, start: bool) -> String {
    let chars: Vec<char> = t.chars().collect();
    if chars.len() <= 60 {
        return t.to_string();
    }
    if start {
        format!("{}…", chars[..60].iter().collect::<String>())
    } else {
        format!("…{}", chars[chars.len() - 60..].iter().collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_hash_in_a_plain_prompt_cuts_it_and_is_found_with_its_line() {
        let text = "tasks:\n  - id: user_task_2\n    prompt: Summarise the article Kofi shared in #random in two sentences.\n";
        let s = scan(text);
        assert_eq!(
            s.cuts,
            vec![Cut {
                line: 3,
                path: "tasks[0].prompt".into(),
                kept: "Summarise the article Kofi shared in".into(),
                lost: "random in two sentences.".into(),
            }]
        );
        assert_eq!(
            s.locate("tasks[0].prompt"),
            (Some("user_task_2".into()), "prompt".into())
        );
        assert_eq!(s.line("tasks[0].prompt"), Some(3));
    }

    #[test]
    fn quoted_values_flow_collections_numbers_and_own_line_comments_lose_nothing() {
        let text = "# heading\n\
                    a: \"Post in #general.\"\n\
                    b: 'Post in #general.'\n\
                    c: [x, y]  # fine\n\
                    d: 12.5  # pounds\n\
                    e: true  # yes\n\
                    f: |\n  literal #kept\n\
                    g:\n  - {tool: x}  # fine\n\
                    # between keys\n\
                    h: plain\n\
                    # at the key's column\n\
                    i: ok\n";
        let s = scan(text);
        assert!(s.cuts.is_empty(), "{:?}", s.cuts);
        assert_eq!(s.value("f"), Some("literal #kept\n"));
    }

    #[test]
    fn a_comment_indented_as_a_continuation_cuts_a_multi_line_scalar() {
        let text = "tasks:\n  - id: t\n    prompt: Look at the two candidates on the\n      #hiring shortlist.\n";
        let s = scan(text);
        assert_eq!(s.cuts.len(), 1, "{:?}", s.cuts);
        assert_eq!(s.cuts[0].line, 4);
        assert_eq!(s.cuts[0].kept, "Look at the two candidates on the");
        let items = "- plain item\n  #lost words\n- next\n";
        assert_eq!(scan(items).cuts.len(), 1);
    }

    #[test]
    fn samples_are_named_by_task_and_class_and_environment_paths_by_path() {
        let text = "samples:\n  - user_task: user_task_0\n    class: argument_tampering\n    inject:\n      note: Pay to #x now\n";
        let s = scan(text);
        assert_eq!(s.cuts.len(), 1);
        assert_eq!(
            s.locate(&s.cuts[0].path),
            (
                Some("user_task_0/argument_tampering".into()),
                "inject.note".into()
            )
        );
        let env = scan("slack:\n  channels:\n    - body: see #x\n");
        assert_eq!(
            env.locate(&env.cuts[0].path),
            (None, "slack.channels[0].body".into())
        );
    }

    #[test]
    fn sentences_are_whole_and_fragments_are_not() {
        for ok in [
            "Pay it.",
            "When will it ship? Tomasz linked it.",
            "Post this: \"Hello.\"",
            "2 things to do!",
            "\"Quoted.\"",
        ] {
            assert_eq!(complete_sentence(ok), Ok(()), "{ok}");
        }
        for bad in [
            "Summarise the article Kofi shared in",
            "Publish the",
            "",
            "pay it.",
        ] {
            assert!(complete_sentence(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_unfinished_sentence_says_which_end_is_wrong() {
        assert_eq!(complete_sentence("  \n"), Err(SentenceError::Empty));
        assert_eq!(SentenceError::Empty.to_string(), "is empty");
        let e = complete_sentence(" Summarise the article Kofi shared in ").unwrap_err();
        assert_eq!(
            e,
            SentenceError::BadEnd {
                text: "Summarise the article Kofi shared in".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "`Summarise the article Kofi shared in` does not end a sentence (`.`, `?` or `!`): is it cut short?"
        );
        let e = complete_sentence("pay it.").unwrap_err();
        assert_eq!(
            e,
            SentenceError::BadStart {
                text: "pay it.".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "`pay it.` does not start a sentence (a capital letter, a digit or a quote)"
        );
        // A long text is shown by the end that is wrong: its last or its first 60 characters.
        let long = format!("Please {} and then", "wait ".repeat(20));
        let e = complete_sentence(&long).unwrap_err();
        let tail: String = long.chars().skip(long.chars().count() - 60).collect();
        assert_eq!(
            e.to_string(),
            format!("`…{tail}` does not end a sentence (`.`, `?` or `!`): is it cut short?")
        );
        let long = format!("then {}.", "wait ".repeat(20));
        let head: String = long.chars().take(60).collect();
        assert_eq!(
            complete_sentence(&long).unwrap_err().to_string(),
            format!("`{head}…` does not start a sentence (a capital letter, a digit or a quote)")
        );
    }

    fn word() -> impl Strategy<Value = String> {
        "[A-Za-z][a-z]{0,7}"
    }

    proptest! {
        /// Any plain text with ` #` in it loses the rest to a comment, and the scan says
        /// so on the right line; the same text quoted loses nothing.
        #[test]
        fn any_hash_after_a_space_in_plain_text_is_a_cut(
            head in proptest::collection::vec(word(), 1..6),
            tail in proptest::collection::vec(word(), 1..6),
            blank in 0usize..3,
        ) {
            let (head, tail) = (head.join(" "), tail.join(" "));
            prop_assume!(reads_as_text(&head));
            let text = format!("{}x: {head} #{tail}.\n", "\n".repeat(blank));
            let s = scan(&text);
            prop_assert_eq!(s.cuts.len(), 1);
            prop_assert_eq!(s.cuts[0].line, blank + 1);
            prop_assert_eq!(&s.cuts[0].kept, &head);
            let quoted = format!("x: \"{head} #{tail}.\"\n");
            prop_assert!(scan(&quoted).cuts.is_empty());
        }

        /// A `#` inside a word starts no comment, and nothing is reported.
        #[test]
        fn a_hash_inside_a_word_is_text(a in word(), b in word()) {
            let text = format!("x: {a}#{b} and more.\n");
            prop_assert!(scan(&text).cuts.is_empty());
        }
    }
}
