//! The settings `run.json` keeps in [`RunSettings::extra`] under known keys: each is
//! written and read back here only, through one type, so a reader never decodes the
//! JSON by hand. `extra` itself stays open-ended (a rerun compares every key present in
//! either run), and what these write is byte for byte what the keys always held.

use crate::external::protocol::{PackageOrigin, TraceMode};
use crate::model::answer_judge::JudgeIdentity;
use serde::{Deserialize, Serialize};
use sieve_record::RunSettings;

/// The key that holds each bridged package's version and origin, by package name.
pub const PACKAGES_SETTING: &str = "packages";
/// The key that holds the answer judge's identity, when a run has one.
pub const ANSWER_JUDGE_SETTING: &str = "answer_judge";
/// The key that holds which calls reach a bridged package's trace, when not all do.
pub const TRACE_SETTING: &str = "trace";

/// A bridged package as a run records it: its version and the distribution it was
/// installed from (`None` when the provider did not say).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageRecord {
    pub version: String,
    pub origin: Option<PackageOrigin>,
}

/// A known key of `run.json`'s settings that does not hold what its writer wrote.
#[derive(Debug, thiserror::Error)]
pub enum ExtraError {
    #[error("setting `{PACKAGES_SETTING}` is not a map of package names to records: {found}")]
    NotPackages { found: String },
    #[error(
        "setting `{PACKAGES_SETTING}` of package `{package}` is not a version and an origin: {source}"
    )]
    Package {
        package: String,
        source: serde_json::Error,
    },
}

/// Records the bridged packages, in the order given (a name given twice keeps its first
/// place and its last record).
pub fn set_packages(
    settings: &mut RunSettings,
    packages: impl IntoIterator<Item = (String, PackageRecord)>,
) {
    let mut map = serde_json::Map::new();
    for (name, record) in packages {
        map.insert(name, to_json(&record));
    }
    settings
        .extra
        .insert(PACKAGES_SETTING.into(), serde_json::Value::Object(map));
}

/// The bridged packages a run recorded, in recorded order: none when it recorded none.
pub fn packages(settings: &RunSettings) -> Result<Vec<(String, PackageRecord)>, ExtraError> {
    let Some(v) = settings.extra.get(PACKAGES_SETTING) else {
        return Ok(Vec::new());
    };
    let map = v.as_object().ok_or_else(|| ExtraError::NotPackages {
        found: v.to_string(),
    })?;
    map.iter()
        .map(|(package, record)| {
            PackageRecord::deserialize(record)
                .map(|r| (package.clone(), r))
                .map_err(|source| ExtraError::Package {
                    package: package.clone(),
                    source,
                })
        })
        .collect()
}

/// Records the answer judge's identity.
pub fn set_answer_judge(settings: &mut RunSettings, judge: &JudgeIdentity) {
    settings
        .extra
        .insert(ANSWER_JUDGE_SETTING.into(), to_json(judge));
}

/// Records which calls reach the bridged packages' traces.
pub fn set_trace(settings: &mut RunSettings, trace: TraceMode) {
    settings
        .extra
        .insert(TRACE_SETTING.into(), serde_json::json!(trace.as_str()));
}

/// A record of these types as JSON: they hold strings, enums and JSON objects with
/// string keys only, which always serialise.
fn to_json(value: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(value).expect("a record of strings serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings() -> RunSettings {
        RunSettings {
            harness_version: "0".into(),
            agent: Default::default(),
            planner: Default::default(),
            judge: Default::default(),
            embedder: Default::default(),
            max_steps: 1,
            defense_config: String::new(),
            system_prompts: Default::default(),
            extra: Default::default(),
        }
    }

    fn origin(sha: &str, url: Option<&str>) -> Option<PackageOrigin> {
        Some(PackageOrigin {
            record_sha256: sha.into(),
            source_url: url.map(String::from),
        })
    }

    #[test]
    fn packages_read_back_as_written_in_the_bytes_they_always_had() {
        let mut s = settings();
        assert!(packages(&s).unwrap().is_empty(), "no packages recorded");
        let recorded = vec![
            (
                "zeta".to_string(),
                PackageRecord {
                    version: "1.2".into(),
                    origin: origin("ab", Some("git+https://x/fork.git")),
                },
            ),
            (
                "alpha".to_string(),
                PackageRecord {
                    version: "0.1".into(),
                    origin: None,
                },
            ),
        ];
        set_packages(&mut s, recorded.clone());
        assert_eq!(packages(&s).unwrap(), recorded);
        // What the json! writer it replaced wrote, in its order.
        let before = json!({
            "zeta": {"version": "1.2", "origin": {"record_sha256": "ab", "source_url": "git+https://x/fork.git"}},
            "alpha": {"version": "0.1", "origin": null},
        });
        assert_eq!(
            serde_json::to_string(&s.extra[PACKAGES_SETTING]).unwrap(),
            before.to_string()
        );
    }

    #[test]
    fn a_corrupt_package_entry_is_an_error_naming_the_package() {
        let mut s = settings();
        s.extra.insert(
            PACKAGES_SETTING.into(),
            json!({"good": {"version": "1", "origin": null}, "toy": {"origin": null}}),
        );
        let e = packages(&s).unwrap_err().to_string();
        assert!(e.contains("package `toy`") && e.contains("version"), "{e}");
        s.extra.insert(
            PACKAGES_SETTING.into(),
            json!({"toy": {"version": "1", "origin": {"record_sha256": 5}}}),
        );
        let e = packages(&s).unwrap_err().to_string();
        assert!(e.contains("package `toy`"), "{e}");
        s.extra.insert(PACKAGES_SETTING.into(), json!(["toy"]));
        let e = packages(&s).unwrap_err().to_string();
        assert!(e.contains("not a map") && e.contains("[\"toy\"]"), "{e}");
    }
}
