//! SIEVE's configuration: weight sets (variants), thresholds, and the trust and risk
//! tables, loaded from `configs/sieve.toml`.
//!
//! A variant names a weight set and switches. `drop = ["causal"]` removes a term and
//! renormalises the remaining weights so they sum to 1 again; that arithmetic lives here,
//! in code, so the file cannot get it wrong.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a SIEVE configuration, a variant name or a setting was refused.
#[derive(Debug, thiserror::Error)]
pub enum SieveConfigError {
    /// The configuration file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid configuration; the message names the setting and, where
    /// there is one, the variant.
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    /// No variant of that name in the configuration.
    #[error(
        "unknown SIEVE variant `{name}`{}; available: {}",
        crate::suggest::did_you_mean(name, available.iter().map(String::as_str)),
        available.join(", ")
    )]
    UnknownVariant {
        name: String,
        available: Vec<String>,
    },
    /// A weight, term or setting (in `--weights`, a variant or a defense name) that is
    /// not one or is out of range.
    #[error("{0}")]
    Setting(String),
}

use SieveConfigError::Setting;

/// The configuration shipped with the crate, used when no file is given and
/// `configs/sieve.toml` is not found.
pub const BUILTIN: &str = include_str!("../../../configs/sieve.toml");

/// The four weights of `S_align`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Weights {
    #[serde(default)]
    pub w_sem: f64,
    #[serde(default)]
    pub w_causal: f64,
    #[serde(default)]
    pub w_prov: f64,
    #[serde(default)]
    pub w_risk: f64,
}

/// How `S_prov` values a tool output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// One trust for every tool output (`trust.tool_output`), one for the request: the
    /// paper's experiments used a static score.
    Static,
    /// The per-tool table (`[trust.tools]`): who can write what each tool returns.
    Dynamic,
}

/// One of the four terms of `S_align`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    Sem,
    Causal,
    Prov,
    Risk,
}

impl Term {
    pub fn name(self) -> &'static str {
        match self {
            Term::Sem => "sem",
            Term::Causal => "causal",
            Term::Prov => "prov",
            Term::Risk => "risk",
        }
    }

    pub fn parse(s: &str) -> Result<Term, SieveConfigError> {
        match s.trim().trim_start_matches("w_") {
            "sem" => Ok(Term::Sem),
            "causal" => Ok(Term::Causal),
            "prov" => Ok(Term::Prov),
            "risk" => Ok(Term::Risk),
            other => Err(Setting(format!(
                "unknown S_align term `{other}`; use sem, causal, prov or risk"
            ))),
        }
    }
}

impl Weights {
    pub fn get(&self, t: Term) -> f64 {
        match t {
            Term::Sem => self.w_sem,
            Term::Causal => self.w_causal,
            Term::Prov => self.w_prov,
            Term::Risk => self.w_risk,
        }
    }

    fn set(&mut self, t: Term, v: f64) {
        match t {
            Term::Sem => self.w_sem = v,
            Term::Causal => self.w_causal = v,
            Term::Prov => self.w_prov = v,
            Term::Risk => self.w_risk = v,
        }
    }

    pub fn sum(&self) -> f64 {
        self.w_sem + self.w_causal + self.w_prov + self.w_risk
    }

    fn check(&self) -> Result<(), SieveConfigError> {
        for (n, w) in [
            ("w_sem", self.w_sem),
            ("w_causal", self.w_causal),
            ("w_prov", self.w_prov),
            ("w_risk", self.w_risk),
        ] {
            if !(0.0..=1.0).contains(&w) || w.is_nan() {
                return Err(Setting(format!("{n} must be in [0,1], got {w}")));
            }
        }
        if self.sum() <= 0.0 {
            return Err(Setting("at least one weight must be positive".into()));
        }
        Ok(())
    }

    /// Scales the weights to sum to 1.
    pub fn normalised(&self) -> Weights {
        let s = self.sum();
        if (s - 1.0).abs() < 1e-12 {
            // Already a unit sum: dividing would only add float noise (0.1 → 0.10000000000000002).
            return *self;
        }
        Weights {
            w_sem: self.w_sem / s,
            w_causal: self.w_causal / s,
            w_prov: self.w_prov / s,
            w_risk: self.w_risk / s,
        }
    }

    /// Drops a term and renormalises the rest (the paper's ablation).
    pub fn without(&self, term: Term) -> Weights {
        let mut w = *self;
        match term {
            Term::Sem => w.w_sem = 0.0,
            Term::Causal => w.w_causal = 0.0,
            Term::Prov => w.w_prov = 0.0,
            Term::Risk => w.w_risk = 0.0,
        }
        w.normalised()
    }

    /// Parses an ad-hoc set, `w_sem=0.2,w_causal=0.6,...`. Unnamed weights are 0; the
    /// set is renormalised to sum to 1.
    pub fn parse_adhoc(spec: &str) -> Result<Weights, SieveConfigError> {
        let mut w = Weights {
            w_sem: 0.0,
            w_causal: 0.0,
            w_prov: 0.0,
            w_risk: 0.0,
        };
        let mut seen: Vec<Term> = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| Setting(format!("--weights: expected name=value, got `{part}`")))?;
            let v: f64 = v
                .trim()
                .parse()
                .map_err(|_| Setting(format!("--weights: `{v}` is not a number")))?;
            let term = Term::parse(k).map_err(|e| Setting(format!("--weights: {e}")))?;
            if seen.contains(&term) {
                return Err(Setting(format!(
                    "--weights: `{}` is given twice; name each weight once",
                    k.trim()
                )));
            }
            seen.push(term);
            match term {
                Term::Sem => w.w_sem = v,
                Term::Causal => w.w_causal = v,
                Term::Prov => w.w_prov = v,
                Term::Risk => w.w_risk = v,
            }
        }
        w.check().map_err(|e| Setting(format!("--weights: {e}")))?;
        Ok(w.normalised())
    }

    /// `0.10/0.70/0.10/0.10`, for names and notes.
    pub fn label(&self) -> String {
        format!(
            "w_sem={},w_causal={},w_prov={},w_risk={}",
            round(self.w_sem),
            round(self.w_causal),
            round(self.w_prov),
            round(self.w_risk)
        )
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One setting moved away from a variant's value: a point of a sensitivity sweep
/// (`sieve@threshold=0.35`, `sieve@w_causal=0.5`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Override {
    Threshold(f64),
    /// The term's weight is set to the value and the other weights are scaled to share
    /// the rest in their original proportions, as the paper's ablations renormalise.
    Weight(Term, f64),
}

impl Override {
    /// Parses `threshold=<x>` or `w_<term>=<x>`, x in [0,1].
    pub fn parse(spec: &str) -> Result<Override, SieveConfigError> {
        let (k, v) = spec
            .split_once('=')
            .ok_or_else(|| Setting(format!("expected <setting>=<value>, got `{spec}`")))?;
        let v: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| (0.0..=1.0).contains(x))
            .ok_or_else(|| Setting(format!("`{k}` needs a value in [0,1], got `{v}`")))?;
        Override::new(k, v)
    }

    /// `setting` (`threshold` or `w_<term>`) moved to `value`, in [0,1]: a sweep point's
    /// fields as [`crate::defense::DefenseSpec`] read them.
    pub fn new(setting: &str, value: f64) -> Result<Override, SieveConfigError> {
        if !(0.0..=1.0).contains(&value) {
            return Err(Setting(format!(
                "`{setting}` needs a value in [0,1], got `{value}`"
            )));
        }
        match setting.trim() {
            "threshold" => Ok(Override::Threshold(value)),
            w if w.starts_with("w_") => Ok(Override::Weight(Term::parse(w)?, value)),
            other => Err(Setting(format!(
                "unknown setting `{other}`; use threshold, w_sem, w_causal, w_prov or w_risk"
            ))),
        }
    }

    /// The setting it moves, as defense names write it (`threshold`, `w_causal`).
    pub fn setting(&self) -> String {
        match self {
            Override::Threshold(_) => "threshold".to_string(),
            Override::Weight(t, _) => format!("w_{}", t.name()),
        }
    }

    /// The value it moves the setting to.
    pub fn value(&self) -> f64 {
        match *self {
            Override::Threshold(v) | Override::Weight(_, v) => v,
        }
    }

    /// The label used in defense names: `threshold=0.35`.
    pub fn label(&self) -> String {
        match self {
            Override::Threshold(v) => format!("threshold={}", round(*v)),
            Override::Weight(t, v) => format!("w_{}={}", t.name(), round(*v)),
        }
    }

    /// Applies the setting to a variant.
    pub fn apply(&self, v: &mut Variant) -> Result<(), SieveConfigError> {
        match *self {
            Override::Threshold(x) => v.threshold = x,
            Override::Weight(t, x) => {
                let others = v.weights.sum() - v.weights.get(t);
                if others <= 0.0 && x < 1.0 {
                    return Err(Setting(format!(
                        "variant `{}` has no other weight to share the rest of w_{}",
                        v.name,
                        t.name()
                    )));
                }
                let scale = if others > 0.0 {
                    (1.0 - x) / others
                } else {
                    0.0
                };
                let mut w = v.weights;
                for u in [Term::Sem, Term::Causal, Term::Prov, Term::Risk] {
                    let value = if u == t { x } else { w.get(u) * scale };
                    w.set(u, value);
                }
                v.weights = w;
            }
        }
        Ok(())
    }
}

/// A variant as written in the file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: String,
    #[serde(default)]
    weights: Option<Weights>,
    #[serde(default)]
    drop: Vec<String>,
    #[serde(default)]
    threshold: Option<f64>,
    #[serde(default)]
    gray_band: Option<f64>,
    #[serde(default)]
    layer1_only: bool,
    #[serde(default = "yes")]
    graph_update: bool,
    #[serde(default)]
    provenance: Option<Provenance>,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrust {
    user: f64,
    tool_output: f64,
    #[serde(default)]
    tools: BTreeMap<String, f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    threshold: f64,
    #[serde(default)]
    gray_band: f64,
    provenance: Provenance,
    weights: Weights,
    #[serde(rename = "variant")]
    variants: Vec<RawVariant>,
    trust: RawTrust,
    #[serde(default)]
    risk: BTreeMap<String, f64>,
}

/// A resolved variant: everything an episode needs to decide.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Variant {
    pub name: String,
    /// Normalised to sum to 1.
    pub weights: Weights,
    /// Approve at `S_align >= threshold`.
    pub threshold: f64,
    /// `S_align` in `[threshold - gray_band, threshold)` asks the user; 0 = off.
    pub gray_band: f64,
    /// Block every call that fails layer 1, without a judge.
    pub layer1_only: bool,
    /// Add approved deviations to the graph.
    pub graph_update: bool,
    /// How `S_prov` values tool outputs.
    pub provenance: Provenance,
}

/// Trust of the content that triggered an action.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TrustTable {
    pub user: f64,
    pub tool_output: f64,
    pub tools: BTreeMap<String, f64>,
}

impl TrustTable {
    /// Trust of a tool's output; tools not listed get the default.
    pub fn tool(&self, name: &str) -> f64 {
        self.tools.get(name).copied().unwrap_or(self.tool_output)
    }
}

/// The whole configuration, resolved.
///
/// A run's identity hashes its serialised form (`defense_config` in `run.json`). A field
/// added later must leave it unchanged where it holds the value that keeps today's
/// behaviour (`#[serde(skip_serializing_if = ...)]`, here and in [`Variant`] and
/// [`TrustTable`]), so folders recorded before it still resume.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SieveConfig {
    /// In file order; the first is the default (`sieve` with no variant).
    pub variants: Vec<Variant>,
    pub trust: TrustTable,
    /// Per-tool risk overrides; tools not listed use their own default risk.
    pub risk: BTreeMap<String, f64>,
    /// Where it came from, for notes (not part of a run's identity).
    #[serde(skip)]
    pub source: String,
}

fn unit(what: &str, v: f64) -> Result<f64, SieveConfigError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(Setting(format!("{what} must be in [0,1], got {v}")))
    }
}

impl SieveConfig {
    /// Parses a configuration text.
    pub fn parse(text: &str, source: &str) -> Result<SieveConfig, SieveConfigError> {
        let err = |e: String| SieveConfigError::Invalid {
            file: source.to_string(),
            message: e,
        };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| err(format!("invalid SIEVE config: {e}")))?;
        let err_of = |e: SieveConfigError| err(e.to_string());
        raw.weights.check().map_err(err_of)?;
        unit("threshold", raw.threshold).map_err(err_of)?;
        unit("gray_band", raw.gray_band).map_err(err_of)?;
        let mut variants = Vec::new();
        for v in raw.variants {
            let mut w = match v.weights {
                Some(w) => {
                    w.check()
                        .map_err(|e| err(format!("variant `{}`: {e}", v.name)))?;
                    w.normalised()
                }
                None => raw.weights.normalised(),
            };
            for d in &v.drop {
                let t = Term::parse(d).map_err(|e| err(format!("variant `{}`: {e}", v.name)))?;
                w = w.without(t);
                if !w.sum().is_finite() || w.sum() <= 0.0 {
                    return Err(err(format!(
                        "variant `{}` drops every weighted term",
                        v.name
                    )));
                }
            }
            let threshold = unit("threshold", v.threshold.unwrap_or(raw.threshold))
                .map_err(|e| err(format!("variant `{}`: {e}", v.name)))?;
            let gray_band = unit("gray_band", v.gray_band.unwrap_or(raw.gray_band))
                .map_err(|e| err(format!("variant `{}`: {e}", v.name)))?;
            if variants.iter().any(|x: &Variant| x.name == v.name) {
                return Err(err(format!("variant `{}` is defined twice", v.name)));
            }
            variants.push(Variant {
                name: v.name,
                weights: w,
                threshold,
                gray_band,
                layer1_only: v.layer1_only,
                graph_update: v.graph_update,
                provenance: v.provenance.unwrap_or(raw.provenance),
            });
        }
        if variants.is_empty() {
            return Err(err("no [[variant]] defined".into()));
        }
        unit("trust.user", raw.trust.user).map_err(err_of)?;
        unit("trust.tool_output", raw.trust.tool_output).map_err(err_of)?;
        for (k, v) in raw.trust.tools.iter().chain(raw.risk.iter()) {
            unit(k, *v).map_err(err_of)?;
        }
        Ok(SieveConfig {
            variants,
            trust: TrustTable {
                user: raw.trust.user,
                tool_output: raw.trust.tool_output,
                tools: raw.trust.tools,
            },
            risk: raw.risk,
            source: source.to_string(),
        })
    }

    /// The shipped configuration.
    pub fn builtin() -> SieveConfig {
        SieveConfig::parse(BUILTIN, "built-in configs/sieve.toml").expect("built-in config parses")
    }

    /// Loads a configuration file.
    pub fn load(path: &Path) -> Result<SieveConfig, SieveConfigError> {
        let text = crate::bounded::read_to_string(path, crate::bounded::MAX_INPUT_BYTES).map_err(
            |source| SieveConfigError::Read {
                path: path.to_path_buf(),
                source,
            },
        )?;
        SieveConfig::parse(&text, &path.display().to_string())
    }

    /// A variant by name.
    pub fn variant(&self, name: &str) -> Result<&Variant, SieveConfigError> {
        self.variants
            .iter()
            .find(|v| v.name == name)
            .ok_or_else(|| SieveConfigError::UnknownVariant {
                name: name.to_string(),
                available: self.variants.iter().map(|v| v.name.clone()).collect(),
            })
    }

    /// The risk of a tool: the table's value, else the tool's own default.
    pub fn risk(&self, tool: &str, default: f64) -> f64 {
        self.risk.get(tool).copied().unwrap_or(default)
    }
}

/// Whether the difference of `defense` (a SIEVE variant, `sieve:no-sem`) from full SIEVE
/// is fixed by a scripted role or by construction rather than measured, given the roles
/// no LLM played in its row: the reason, for the row's note. `None` for a variant whose
/// difference is measured, for a sweep point (its setting moves too), or when the roles
/// that decide it are real models.
pub fn scripted_difference(
    defense: &crate::defense::DefenseSpec,
    roles: Option<&sieve_record::ScriptedRoles>,
) -> Option<String> {
    use sieve_record::Component;
    if defense.registered() != super::ENTRY.name || defense.point.is_some() {
        return None;
    }
    let variant = defense.variant()?;
    let role = |c: Component| roles.and_then(|r| r.get(&c));
    match variant {
        "no-sem" => role(Component::Embedding).map(|e| {
            format!(
                "decided by the {}: S_sem from it measures word overlap, not meaning, so dropping it removes a term no model computed",
                e.label
            )
        }),
        "no-graph-update" => role(Component::Judge).map(|j| {
            format!(
                "decided by the {}: it scores an identical call identically, so judging a repeated approved call again approves it again; only a real judge's drift between calls is measured here",
                j.label
            )
        }),
        "no-causal" => role(Component::Judge).map(|j| {
            format!(
                "decided by the {}: the sign and size of the difference follow the judge quality the row is given (judge_auc), not a measured judge",
                j.label
            )
        }),
        "no-prov" => Some(
            "decided by construction: static provenance gives every tool output the same trust (0.5), so most escalated calls have S_prov at the threshold and dropping it mostly renormalises the other terms; `dynamic-prov` is the variant whose provenance differs by source"
                .to_string(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_difference_reads_the_variant_of_sieve_only() {
        use crate::defense::DefenseSpec;
        use sieve_record::{Component, ScriptedRole, ScriptedRoles};
        let lexical = ScriptedRole {
            label: "lexical embedder".into(),
            short: "lexical".into(),
            knows: String::new(),
        };
        let roles = ScriptedRoles::from([(Component::Embedding, lexical)]);
        let note = |name: &str| scripted_difference(&DefenseSpec::parse(name), Some(&roles));
        assert!(
            note("sieve:no-sem")
                .unwrap()
                .starts_with("decided by the lexical embedder")
        );
        assert!(
            note("sieve:no-prov")
                .unwrap()
                .starts_with("decided by construction")
        );
        assert_eq!(
            note("sieve:no-causal"),
            None,
            "the judge is no scripted role here"
        );
        assert_eq!(note("sieve"), None);
        assert_eq!(note("spotlight:no-sem"), None);
        assert_eq!(note("sieve:no-sem@threshold=0.4"), None, "a sweep point");
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn assert_w(w: &Weights, sem: f64, causal: f64, prov: f64, risk: f64) {
        assert!(
            close(w.w_sem, sem)
                && close(w.w_causal, causal)
                && close(w.w_prov, prov)
                && close(w.w_risk, risk),
            "{w:?} != {sem}/{causal}/{prov}/{risk}"
        );
    }

    #[test]
    fn builtin_variants_renormalise_to_hand_computed_weights() {
        let c = SieveConfig::builtin();
        // full: the paper's 0.1/0.7/0.1/0.1, already summing to 1.
        assert_w(&c.variant("full").unwrap().weights, 0.1, 0.7, 0.1, 0.1);
        let e = c.variant("no_causal").unwrap_err().to_string();
        assert!(e.contains("did you mean `no-causal`"), "{e}");
        // no-sem: 0.7, 0.1, 0.1 over 0.9 = 7/9, 1/9, 1/9.
        assert_w(
            &c.variant("no-sem").unwrap().weights,
            0.0,
            7.0 / 9.0,
            1.0 / 9.0,
            1.0 / 9.0,
        );
        // no-causal: 0.1 each over 0.3 = 1/3 each.
        assert_w(
            &c.variant("no-causal").unwrap().weights,
            1.0 / 3.0,
            0.0,
            1.0 / 3.0,
            1.0 / 3.0,
        );
        assert_w(
            &c.variant("no-prov").unwrap().weights,
            1.0 / 9.0,
            7.0 / 9.0,
            0.0,
            1.0 / 9.0,
        );
        assert_w(
            &c.variant("no-risk").unwrap().weights,
            1.0 / 9.0,
            7.0 / 9.0,
            1.0 / 9.0,
            0.0,
        );
        let l1 = c.variant("layer1-only").unwrap();
        assert!(l1.layer1_only && l1.graph_update);
        let ng = c.variant("no-graph-update").unwrap();
        assert!(!ng.graph_update && !ng.layer1_only);
        assert_w(&ng.weights, 0.1, 0.7, 0.1, 0.1);
        assert_eq!(
            c.variant("dynamic-prov").unwrap().provenance,
            Provenance::Dynamic
        );
        assert_w(
            &c.variant("dynamic-prov").unwrap().weights,
            0.1,
            0.7,
            0.1,
            0.1,
        );
        for v in &c.variants {
            if v.name != "dynamic-prov" {
                assert_eq!(v.provenance, Provenance::Static, "{}", v.name);
            }
            assert!(close(v.weights.sum(), 1.0), "{}", v.name);
            assert_eq!(v.threshold, 0.5);
            assert_eq!(v.gray_band, 0.0, "gray band is off by default");
        }
        assert_eq!(c.variants[0].name, "full");
    }

    #[test]
    fn sweep_overrides_set_one_value_and_renormalise_the_others() {
        let c = SieveConfig::builtin();
        let mut v = c.variant("full").unwrap().clone();
        Override::parse("w_causal=0.4")
            .unwrap()
            .apply(&mut v)
            .unwrap();
        // The other three (0.1 each) share 0.6 in their proportions: 0.2 each.
        assert_w(&v.weights, 0.2, 0.4, 0.2, 0.2);
        let mut v = c.variant("full").unwrap().clone();
        Override::parse("w_sem=0.3").unwrap().apply(&mut v).unwrap();
        // 0.7/0.1/0.1 scaled by 0.7/0.9.
        assert_w(
            &v.weights,
            0.3,
            0.7 * 0.7 / 0.9,
            0.1 * 0.7 / 0.9,
            0.1 * 0.7 / 0.9,
        );
        let mut v = c.variant("full").unwrap().clone();
        let t = Override::parse("threshold=0.35").unwrap();
        t.apply(&mut v).unwrap();
        assert_eq!(v.threshold, 0.35);
        assert_eq!(t.label(), "threshold=0.35");
        for bad in ["threshold", "threshold=2", "w_foo=0.1", "gray=0.1"] {
            assert!(Override::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn adhoc_weights_parse_and_renormalise() {
        let w = Weights::parse_adhoc("w_sem=0.2,w_causal=0.6").unwrap();
        assert_w(&w, 0.25, 0.75, 0.0, 0.0);
        let w = Weights::parse_adhoc("sem=0.1,causal=0.7,prov=0.1,risk=0.1").unwrap();
        assert_w(&w, 0.1, 0.7, 0.1, 0.1);
        assert!(Weights::parse_adhoc("w_sem=2").is_err());
        assert!(Weights::parse_adhoc("w_foo=0.1").is_err());
        assert!(Weights::parse_adhoc("w_sem=0").is_err());
        assert!(Weights::parse_adhoc("w_sem").is_err());
    }

    #[test]
    fn bad_configs_are_rejected_with_reasons() {
        let base = "threshold = 0.5\nprovenance = \"static\"\n[weights]\nw_sem = 0.5\nw_causal = 0.5\n[trust]\nuser = 1.0\ntool_output = 0.5\n";
        assert!(
            SieveConfig::parse(base, "t")
                .unwrap_err()
                .to_string()
                .contains("variant")
        );
        let ok = format!("{base}[[variant]]\nname = \"full\"\n");
        assert!(SieveConfig::parse(&ok, "t").is_ok());
        let all_dropped =
            format!("{base}[[variant]]\nname = \"x\"\ndrop = [\"sem\", \"causal\"]\n");
        assert!(SieveConfig::parse(&all_dropped, "t").is_err());
        let bad_risk = format!("{ok}[risk]\nsend_money = 1.5\n");
        assert!(SieveConfig::parse(&bad_risk, "t").is_err());
        let dup = format!("{ok}[[variant]]\nname = \"full\"\n");
        assert!(SieveConfig::parse(&dup, "t").is_err());
    }
}
