//! One final-answer tool per variant of an enum output type
//! (`AgentBuilder::output_tool_per_variant`): the variants read from the enum's schema in each
//! of serde's tagged representations, and a call's arguments put back into the enum's own JSON.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::tool::ToolSpec;

/// The final-answer tool of one variant: its arguments are the variant's content, and its name
/// says which variant it is.
pub(crate) struct Variant {
    pub(crate) tool: Arc<ToolSpec>,
    /// The variant's name as serde writes it.
    tag: String,
    tagging: Tagging,
    content: Content,
}

/// How the enum tells its variants apart, as serde writes it.
#[derive(Clone, PartialEq, Eq)]
enum Tagging {
    /// `{"approve": {...}}`, a unit variant as the string `"cancel"` (serde's default).
    External,
    /// `{"kind": "approve", ...fields}` (`#[serde(tag = "kind")]`).
    Internal { key: String },
    /// `{"t": "approve", "c": ...}` (`#[serde(tag = "t", content = "c")]`).
    Adjacent { key: String, content: String },
}

/// How the tool's arguments hold the variant's content.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Content {
    /// The arguments are the content (an object).
    Fields,
    /// The content is not an object: it sits under `response`.
    Wrapped,
    /// A unit variant: no arguments.
    Unit,
}

impl Variant {
    /// The enum's JSON for a call of this variant's tool with these arguments (empty ones read
    /// as `{}`); members of a unit variant's arguments are ignored.
    pub(crate) fn rebuild(&self, arguments: &str) -> Result<Value, String> {
        let args = match arguments.trim() {
            "" => Value::Object(Map::new()),
            text => serde_json::from_str(text)
                .map_err(|error| format!("the arguments are not JSON: {error}"))?,
        };
        self.rebuild_value(args)
    }

    /// [`rebuild`](Self::rebuild) from the arguments read as JSON: a whole call's, or the
    /// part of one streamed so far (a partial value).
    pub(crate) fn rebuild_value(&self, args: Value) -> Result<Value, String> {
        let Value::Object(mut fields) = args else {
            return Err("the arguments are not an object".to_owned());
        };
        let tag = Value::String(self.tag.clone());
        let (key, content) = match &self.tagging {
            Tagging::Internal { key } => {
                fields.insert(key.clone(), tag);
                return Ok(Value::Object(fields));
            }
            Tagging::External => (None, self.content(fields)?),
            Tagging::Adjacent { key, content } => (Some((key, content)), self.content(fields)?),
        };
        Ok(match (key, content) {
            (None, None) => tag,
            (None, Some(content)) => json!({ self.tag.clone(): content }),
            (Some((key, _)), None) => json!({ key.clone(): tag }),
            (Some((key, at)), Some(content)) => json!({ key.clone(): tag, at.clone(): content }),
        })
    }

    /// The variant's content in its tool's arguments; `None` for a unit variant.
    fn content(&self, mut fields: Map<String, Value>) -> Result<Option<Value>, String> {
        Ok(match self.content {
            Content::Unit => None,
            Content::Fields => Some(Value::Object(fields)),
            Content::Wrapped => Some(
                fields
                    .remove("response")
                    .ok_or_else(|| "the arguments lack `response`".to_owned())?,
            ),
        })
    }
}

/// A variant read from the schema, before it becomes a tool: its tag, its content's schema
/// (`None` for a unit variant) and its doc comment.
struct Read {
    tag: String,
    content: Option<Value>,
    description: Option<String>,
}

/// The variants of an enum's schema, each as a final-answer tool named `{tool}_{tag}` (the tag
/// in snake case) taking the variant's content; why not, when the schema is no enum that serde
/// tags.
pub(crate) fn variants(schema: &Value, tool: &ToolSpec) -> Result<Vec<Variant>, String> {
    let (tagging, read) = read(schema)?;
    let defs = schema.get("$defs");
    let mut names = HashSet::new();
    let mut out = Vec::new();
    for Read {
        tag,
        content,
        description,
    } in read
    {
        let (content, mut parameters) = match content {
            None => (Content::Unit, json!({"type": "object", "properties": {}})),
            Some(content) => match object(&content, defs) {
                Some(fields) => (Content::Fields, fields),
                None => (
                    Content::Wrapped,
                    json!({"type": "object", "properties": {"response": content}, "required": ["response"]}),
                ),
            },
        };
        let map = parameters
            .as_object_mut()
            .ok_or("a variant's content is no schema")?;
        map.remove("title");
        map.entry("additionalProperties")
            .or_insert(Value::Bool(false));
        // `$defs` go where the parameters' references point, when they have any.
        if let Some(defs) = defs.filter(|_| parameters.to_string().contains("\"#/$defs/")) {
            parameters["$defs"] = defs.clone();
        }
        let name = format!("{}_{}", tool.name, snake_case(&tag));
        if !names.insert(name.clone()) {
            return Err(format!("two variants make the tool `{name}`"));
        }
        let description =
            description.unwrap_or_else(|| format!("{} The answer is `{tag}`.", tool.description));
        out.push(Variant {
            tool: Arc::new(ToolSpec {
                name,
                description,
                parameters,
            }),
            tag,
            tagging: tagging.clone(),
            content,
        });
    }
    Ok(out)
}

/// The schema's variants and how they are tagged: internally or adjacently when every
/// variant is an object whose properties share one holding a constant string, externally
/// when every one is an object of one required property or a string constant.
fn read(schema: &Value) -> Result<(Tagging, Vec<Read>), String> {
    if let Some(units) = strings(schema) {
        return Ok((Tagging::External, units));
    }
    let Some(alternatives) = schema.get("oneOf").and_then(Value::as_array) else {
        return Err(match schema.get("type").and_then(Value::as_str) {
            _ if schema.get("anyOf").is_some() => {
                "its schema is an `anyOf` of untagged alternatives (an untagged enum's, or an \
                 `Option`'s)"
                    .to_owned()
            }
            Some(kind) => format!("its schema is of type `{kind}`, not a `oneOf` of variants"),
            None => "its schema has no `oneOf` of variants".to_owned(),
        });
    };
    if let Some(tagged) = tagged(alternatives) {
        return Ok(tagged);
    }
    let mut out = Vec::new();
    for (index, alternative) in alternatives.iter().enumerate() {
        if let Some(units) = strings(alternative) {
            out.extend(units);
            continue;
        }
        let single = alternative
            .get("properties")
            .and_then(Value::as_object)
            .filter(|properties| properties.len() == 1)
            .and_then(|properties| properties.iter().next())
            .filter(|(name, _)| required(alternative).as_slice() == [name.as_str()]);
        let Some((tag, content)) = single else {
            return Err(format!(
                "its `oneOf` alternative {index} is neither an object holding a tag, nor an \
                 object of one property, nor a string"
            ));
        };
        out.push(Read {
            tag: tag.clone(),
            content: Some(content.clone()),
            description: text(alternative, "description"),
        });
    }
    Ok((Tagging::External, out))
}

/// Internally or adjacently tagged variants: every one an object with a required property
/// holding a constant string, the same in all. Adjacently when every one holds that tag and
/// at most one other required property, the same in all that have one; the two read as the
/// same JSON, so an internally tagged enum whose variants each have one field of the same
/// name is offered as an adjacently tagged one.
fn tagged(alternatives: &[Value]) -> Option<(Tagging, Vec<Read>)> {
    let first = alternatives.first()?.get("properties")?.as_object()?;
    let key = first
        .iter()
        .find(|(name, _)| alternatives.iter().all(|a| constant(a, name).is_some()))?
        .0
        .clone();
    let others = |alternative: &Value| -> Vec<String> {
        required(alternative)
            .into_iter()
            .filter(|name| *name != key)
            .map(str::to_owned)
            .collect()
    };
    let mut content_key: Option<String> = None;
    let adjacent = alternatives.iter().all(|alternative| {
        let properties = alternative.get("properties").and_then(Value::as_object);
        let fields = others(alternative);
        alternative.get("$ref").is_none()
            && properties.is_some_and(|p| p.len() == fields.len() + 1)
            && match fields.as_slice() {
                [] => true,
                [field] => content_key.get_or_insert_with(|| field.clone()) == field,
                _ => false,
            }
    });
    let tagging = match content_key {
        Some(content) if adjacent => Tagging::Adjacent {
            key: key.clone(),
            content,
        },
        _ => Tagging::Internal { key: key.clone() },
    };
    let read = alternatives
        .iter()
        .map(|alternative| {
            let tag = constant(alternative, &key)?.to_owned();
            let description = text(alternative, "description");
            let content = match &tagging {
                Tagging::Adjacent { content, .. } => {
                    alternative.get("properties")?.get(content).cloned()
                }
                _ => {
                    let mut fields = alternative.clone();
                    let object = fields.as_object_mut()?;
                    object.remove("description");
                    if let Some(Value::Object(properties)) = object.get_mut("properties") {
                        properties.remove(&key);
                    }
                    if let Some(Value::Array(required)) = object.get_mut("required") {
                        required.retain(|name| name != &Value::String(key.clone()));
                    }
                    Some(fields)
                }
            };
            Some(Read {
                tag,
                content,
                description,
            })
        })
        .collect::<Option<Vec<Read>>>()?;
    Some((tagging, read))
}

/// Unit variants written as strings: `{"type": "string", "enum": [...]}` or `"const"`.
fn strings(schema: &Value) -> Option<Vec<Read>> {
    if schema.get("type").and_then(Value::as_str) != Some("string") {
        return None;
    }
    let tags: Vec<&Value> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(tags)), _) => tags.iter().collect(),
        (None, Some(tag)) => vec![tag],
        _ => return None,
    };
    tags.into_iter()
        .map(|tag| {
            Some(Read {
                tag: tag.as_str()?.to_owned(),
                content: None,
                description: text(schema, "description"),
            })
        })
        .collect()
}

/// The object schema of a variant's content, `$ref` to one in `$defs` resolved; `None` when
/// it is no object.
fn object(content: &Value, defs: Option<&Value>) -> Option<Value> {
    let mut resolved = match content.get("$ref").and_then(Value::as_str) {
        Some(reference) => defs?.get(reference.strip_prefix("#/$defs/")?)?.clone(),
        None => content.clone(),
    };
    if resolved.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let object = resolved.as_object_mut()?;
    // The variant's doc comment describes the tool; the content's own one is dropped.
    object.remove("description");
    object.remove("$ref");
    object.entry("properties").or_insert_with(|| json!({}));
    Some(resolved)
}

/// The constant string of a variant's required property `name`.
fn constant<'a>(alternative: &'a Value, name: &str) -> Option<&'a str> {
    required(alternative).contains(&name).then_some(())?;
    alternative
        .get("properties")?
        .get(name)?
        .get("const")?
        .as_str()
}

/// A schema's required property names.
fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn text(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// `NeedsHuman` -> `needs_human`; characters a tool name may not hold become `_`.
fn snake_case(tag: &str) -> String {
    let chars: Vec<char> = tag.chars().collect();
    let mut out = String::with_capacity(tag.len() + 4);
    for (index, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let after_lower = index > 0
                && (chars[index - 1].is_ascii_lowercase() || chars[index - 1].is_ascii_digit());
            let before_lower = index > 0
                && chars[index - 1].is_ascii_uppercase()
                && chars.get(index + 1).is_some_and(char::is_ascii_lowercase);
            if (after_lower || before_lower) && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() || c == '-' {
            out.push(c);
        } else {
            out.push('_');
        }
    }
    out
}
