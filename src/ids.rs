//! Newtypes for the names that cross module boundaries, so a tool name is never
//! confused with a task id or a vector id.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_string())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// The name of a tool as the model sees it (`send_money`).
    ToolName
);
id_type!(
    /// A user or injection task id, unique within its suite.
    TaskId
);
id_type!(
    /// An injection vector id: a placeholder in a suite's environment.
    VectorId
);

/// The longest name (suite, task, vector, tool, attack) the harness accepts.
pub const MAX_NAME_CHARS: usize = 200;

/// Why a name was refused ([`check_name`]); the caller names the file and field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NameError {
    /// Empty, or longer than [`MAX_NAME_CHARS`] characters.
    #[error("a name is 1 to {MAX_NAME_CHARS} characters, this one has {0}")]
    Length(usize),
    /// A control character or `|` (shown escaped).
    #[error(
        "`{}` holds {}; a name holds no control character and no `|`",
        crate::escape::terminal_cell(name),
        crate::escape::terminal_cell(&char.to_string())
    )]
    Forbidden { name: String, char: char },
}

/// Checks a name the harness puts in record keys, tables and messages, from a suite file,
/// an attack file or a provider: 1 to [`MAX_NAME_CHARS`] characters, no control character
/// (an ESC sequence in a name would act on a terminal, a line break would start a line of
/// its own in a report) and no `|` (the separator of a record's key). The error says why,
/// for a caller that names the file and field.
pub fn check_name(name: &str) -> Result<(), NameError> {
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME_CHARS {
        return Err(NameError::Length(n));
    }
    if let Some(c) = name.chars().find(|c| c.is_control() || *c == '|') {
        return Err(NameError::Forbidden {
            name: name.to_string(),
            char: c,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_control_characters_or_key_separators_are_refused() {
        for ok in ["user_task_0", "important", "dojo-style", "ünïcode name"] {
            check_name(ok).unwrap();
        }
        let esc = check_name("evil\u{1b}[2Jname").unwrap_err().to_string();
        assert!(esc.contains("\\u{1b}") && !esc.contains('\u{1b}'), "{esc}");
        assert!(check_name("a|b").unwrap_err().to_string().contains("`|`"));
        assert!(check_name("line\nbreak").is_err());
        assert!(check_name("").is_err());
        assert!(check_name(&"x".repeat(MAX_NAME_CHARS + 1)).is_err());
    }
}
