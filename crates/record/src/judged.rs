//! What the model-graded answer judge (`--answer-judge`) said about an episode, as its
//! record keeps it. Asking the judge is the main crate's `model::answer_judge`.

use serde::{Deserialize, Serialize};

/// Which verdict the utility columns count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum UtilityFrom {
    /// The deterministic checks (the default).
    #[default]
    Checks,
    /// The answer judge for the answer, the checks for everything else.
    Judge,
    /// Both must hold.
    Both,
}

impl UtilityFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            UtilityFrom::Checks => "checks",
            UtilityFrom::Judge => "judge",
            UtilityFrom::Both => "both",
        }
    }

    /// What rows whose utility is not the checks' alone carry beside the model's name.
    pub fn row_label(self) -> Option<&'static str> {
        match self {
            UtilityFrom::Checks => None,
            UtilityFrom::Judge => Some("utility: answer judge"),
            UtilityFrom::Both => Some("utility: checks and answer judge"),
        }
    }
}

/// One question's two verdicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgedVerdict {
    /// The deterministic checks' verdict on the answer (right / endorses).
    pub checks: bool,
    /// The judge's verdict.
    pub judge: bool,
    /// The judge's one-line reason.
    pub reason: String,
    /// The episode's utility (or attack success) with the judge's verdict for the answer
    /// and the checks for everything else.
    pub outcome: bool,
}

/// What the answer judge said about an episode (the record's `answer_judge`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgedAnswer {
    /// The answer judge's model.
    pub judge: String,
    /// The rubric's version (`answer-rubric/1`).
    pub rubric: String,
    /// Which verdict the utility columns count (`--utility-from`).
    pub utility_from: UtilityFrom,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<JudgedVerdict>,
    /// For an answer-borne attack: endorsing (`true`) versus reporting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<JudgedVerdict>,
}

impl JudgedAnswer {
    /// The utility the rates count, from the checks' utility of the episode.
    pub fn counted_utility(&self, checks: bool) -> bool {
        match (self.utility_from, &self.answer) {
            (UtilityFrom::Checks, _) | (_, None) => checks,
            (UtilityFrom::Judge, Some(v)) => v.outcome,
            (UtilityFrom::Both, Some(v)) => checks && v.outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_utility_follows_the_source() {
        let mut j = JudgedAnswer {
            judge: "openai:j".into(),
            rubric: "answer-rubric/1".into(),
            utility_from: UtilityFrom::Checks,
            answer: Some(JudgedVerdict {
                checks: false,
                judge: true,
                reason: "r".into(),
                outcome: true,
            }),
            attack: None,
        };
        assert!(!j.counted_utility(false));
        j.utility_from = UtilityFrom::Judge;
        assert!(j.counted_utility(false));
        j.utility_from = UtilityFrom::Both;
        assert!(!j.counted_utility(false));
        assert!(j.counted_utility(true));
        j.answer = None;
        j.utility_from = UtilityFrom::Judge;
        assert!(
            !j.counted_utility(false),
            "no judged answer: the checks count"
        );
    }
}
