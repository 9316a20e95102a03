//! What a handoff's transfer call carries ([`InputType`], from `Handoff::input`): the schema of
//! its arguments and the check of what the model sent against it.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::{ArgsError, checked_args, schema_for};
use crate::util::clip;

/// Checks a transfer call's raw arguments (`tool` names the transfer tool in the error).
type Check = fn(tool: &str, raw: &str) -> Result<Value, ArgsError>;

/// The type a transfer call's arguments must fit: its JSON Schema, as a tool's args type gives
/// it ([`schema_for`]), and its check.
#[derive(Clone)]
pub(crate) struct InputType {
    /// The transfer tool's parameters.
    pub(crate) schema: Value,
    /// The type's name, for errors and `Debug`.
    pub(crate) name: &'static str,
    check: Check,
}

impl fmt::Debug for InputType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl InputType {
    /// The input type `T`.
    pub(crate) fn of<T: DeserializeOwned + schemars::JsonSchema + 'static>() -> InputType {
        InputType {
            schema: schema_for::<T>(),
            name: std::any::type_name::<T>(),
            check: checked_args::<T>,
        }
    }

    /// The model's arguments `raw` to the transfer tool `tool` as JSON, once they fit the type
    /// as a tool's arguments must: JSON, of the right types, with every required field, and
    /// no field the schema does not list when it says `additionalProperties: false` (what the
    /// model was shown, whether or not the type denies unknown fields). Otherwise the error
    /// the model reads, naming the tool and the field.
    pub(crate) fn read(&self, tool: &str, raw: &str) -> Result<Value, ArgsError> {
        let input = (self.check)(tool, raw)?;
        match self.unknown_field(&input) {
            None => Ok(input),
            Some(field) => Err(ArgsError {
                tool: tool.to_owned(),
                path: ".".to_owned(),
                message: format!(
                    "unknown field `{}`, {}",
                    clip(field),
                    self.expected_fields()
                ),
            }),
        }
    }

    /// The first top-level field of `input` that the schema, closed to others, does not list.
    fn unknown_field<'v>(&self, input: &'v Value) -> Option<&'v str> {
        let closed = self.schema.get("additionalProperties") == Some(&Value::Bool(false));
        let listed = self.schema.get("properties")?.as_object()?;
        if !closed {
            return None;
        }
        let given = input.as_object()?;
        given
            .keys()
            .find(|key| !listed.contains_key(key.as_str()))
            .map(String::as_str)
    }

    /// The fields the schema lists, as serde words it for an unknown field.
    fn expected_fields(&self) -> String {
        let fields: Vec<String> = self
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|listed| listed.keys().map(|key| format!("`{key}`")).collect())
            .unwrap_or_default();
        match fields.as_slice() {
            [] => "there are no fields".to_owned(),
            [one] => format!("expected {one}"),
            [one, two] => format!("expected {one} or {two}"),
            all => format!("expected one of {}", all.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::InputType;
    use crate::tool::typed_args_of;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Escalation {
        reason: String,
        priority: u8,
        #[serde(default)]
        notes: Vec<String>,
    }

    fn read(raw: &str) -> Result<Value, String> {
        let input = InputType::of::<Escalation>();
        input
            .read("transfer_to_billing", raw)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn arguments_that_fit_are_kept_as_sent_less_refused_nulls() {
        let sent = json!({"reason": "refund", "priority": 2, "notes": ["late"]});
        assert_eq!(read(&sent.to_string()).unwrap(), sent);
        // A strict mode's `null` for a field with a default is taken out, as for a tool.
        let input = read(r#"{"reason":"refund","priority":2,"notes":null}"#).unwrap();
        assert_eq!(input, json!({"reason": "refund", "priority": 2}));
        let typed: Escalation = typed_args_of("transfer_to_billing", &input).unwrap();
        assert_eq!(
            (typed.reason.as_str(), typed.priority, typed.notes),
            ("refund", 2, Vec::<String>::new())
        );
    }

    #[test]
    fn arguments_that_do_not_fit_name_the_tool_and_the_field() {
        let at = "invalid arguments for tool `transfer_to_billing` at";
        let cases = [
            ("{not json", "`.`: key must be a string at line 1 column 2"),
            ("", "`.`: missing field `reason`"),
            (
                r#"{"reason":"refund","priority":"high"}"#,
                "`priority`: invalid type: string \"high\", expected u8",
            ),
            (
                r#"{"reason":"refund","priority":2,"urgent":true}"#,
                "`.`: unknown field `urgent`, expected one of `notes`, `priority`, `reason`",
            ),
            (
                "\"refund\"",
                "`.`: expected a JSON object, found \"refund\"",
            ),
            (
                r#"{"reason":"refund","priority":2} trailing"#,
                "`.`: trailing characters at line 1 column 34",
            ),
        ];
        for (raw, error) in cases {
            assert_eq!(read(raw).unwrap_err(), format!("{at} {error}"), "{raw}");
        }
    }
}
