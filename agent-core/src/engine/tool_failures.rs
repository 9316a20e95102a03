//! The tools' retry limits (`AgentBuilder::tool_retries`, `Tool::RETRIES`): each tool's
//! failed steps in a row over one turn, and the first tool a step takes past its limit.

use crate::hooks::ToolResultRecord;
use crate::text::Text;
use crate::util::clip;

/// Each tool's failures in a row over one turn, counted by step: a step in which a call of
/// the tool failed (its result is an error) adds one, a step in which every call of it
/// succeeded resets it, a step that does not call it leaves it.
#[derive(Default)]
pub(super) struct ToolFailures {
    /// The tools whose last step calling them failed, with how many such steps in a row.
    /// A list, not a map: a turn has a few tools, and a turn that never fails keeps it empty.
    counts: Vec<(Text, usize)>,
}

impl ToolFailures {
    /// Counts a step's results (in the model's call order), leaving out the calls `skip`
    /// names (final-answer calls); gives what ends the turn when a tool is past its limit
    /// (`limit` of its name, `None` for none): the first such tool in call order, how many
    /// times it failed, its limit and the last error the model read from it.
    pub(super) fn count(
        &mut self,
        results: &[ToolResultRecord],
        skip: impl Fn(&str) -> bool,
        limit: impl Fn(&str) -> Option<usize>,
    ) -> Option<String> {
        let mut past = None;
        for (at, record) in results.iter().enumerate() {
            let name = &record.name;
            // Each tool once, at its first call in the step.
            if skip(name) || results[..at].iter().any(|earlier| earlier.name == *name) {
                continue;
            }
            let last_error = results[at..]
                .iter()
                .rfind(|result| result.name == *name && result.is_error);
            let known = self.counts.iter().position(|(counted, _)| counted == name);
            let Some(error) = last_error else {
                if let Some(known) = known {
                    self.counts.swap_remove(known);
                }
                continue;
            };
            let failures = match known {
                Some(known) => {
                    self.counts[known].1 += 1;
                    self.counts[known].1
                }
                None => {
                    self.counts.push((name.clone(), 1));
                    1
                }
            };
            if past.is_none()
                && let Some(max) = limit(name)
                && failures > max
            {
                past = Some(format!(
                    "tool `{name}` failed {failures} {} in a row, past its limit of {max} {}; \
                     last error: {}",
                    if failures == 1 { "time" } else { "times" },
                    if max == 1 { "retry" } else { "retries" },
                    clip(&error.content)
                ));
            }
        }
        past
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::hooks::ToolOutcomeKind;

    fn result(name: &str, error: Option<&str>) -> ToolResultRecord {
        ToolResultRecord {
            call_id: Text::from("c"),
            name: Text::from(name),
            content: Text::from(error.unwrap_or("ok")),
            is_error: error.is_some(),
            outcome: match error {
                Some(_) => ToolOutcomeKind::Failed,
                None => ToolOutcomeKind::Executed,
            },
            duration: Duration::ZERO,
        }
    }

    /// Counts each step with a limit of 1 for every tool, none for `free`, and skips `answer`.
    fn steps(steps: &[&[ToolResultRecord]]) -> Vec<Option<String>> {
        let mut failures = ToolFailures::default();
        let limit = |name: &str| (name != "free").then_some(1);
        steps
            .iter()
            .map(|step| failures.count(step, |name| name == "answer", limit))
            .collect()
    }

    #[test]
    fn a_tool_fails_the_turn_at_its_second_failing_step_in_a_row() {
        let fail = [result("lookup", Some("down"))];
        assert_eq!(
            steps(&[&fail, &fail]),
            [
                None,
                Some(
                    "tool `lookup` failed 2 times in a row, past its limit of 1 retry; last \
                     error: down"
                        .to_owned()
                )
            ]
        );
    }

    #[test]
    fn a_step_counts_once_per_tool_and_names_its_last_error() {
        let step = [
            result("lookup", Some("first")),
            result("lookup", Some("second")),
            result("lookup", None),
        ];
        let ended = steps(&[&step, &step]);
        assert_eq!(ended[0], None, "three calls in one step are one failure");
        assert_eq!(
            ended[1].as_deref(),
            Some(
                "tool `lookup` failed 2 times in a row, past its limit of 1 retry; last error: \
                 second"
            )
        );
    }

    #[test]
    fn a_successful_step_resets_and_a_step_without_the_tool_keeps_the_count() {
        let fail = [result("lookup", Some("down"))];
        let other = [result("other", None)];
        let ok = [result("lookup", None)];
        let ended = steps(&[&fail, &ok, &fail, &other, &fail]);
        assert_eq!(ended[..4], [None, None, None, None]);
        assert!(ended[4].is_some(), "{ended:?}");
    }

    #[test]
    fn no_limit_and_skipped_calls_never_end_the_turn() {
        let free = result("free", Some("down"));
        let answer = result("answer", Some("not json"));
        let step = [free, answer];
        assert_eq!(steps(&[&step, &step, &step]), [None, None, None]);
    }

    #[test]
    fn the_first_tool_past_its_limit_in_call_order_is_named() {
        let step = [result("b", Some("b down")), result("a", Some("a down"))];
        let ended = steps(&[&step, &step]);
        assert!(ended[1].as_deref().unwrap().starts_with("tool `b`"));
    }
}
