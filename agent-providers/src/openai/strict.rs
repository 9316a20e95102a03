//! OpenAI strict mode: adapts a canonical JSON Schema (2020-12, as schemars writes it) to the
//! subset strict mode accepts.
//!
//! Every object lists all its properties in `required` and sets `additionalProperties: false`;
//! a property that was optional becomes nullable instead (`Option<T>` reads `null` as `None`).
//! `oneOf` (what schemars writes for enums with data) becomes `anyOf`, which is equivalent for
//! its mutually exclusive branches. Annotations strict mode rejects (`$schema`, `default`,
//! `examples`, ...) and `format`s it does not know (`uint32`, `double`, ...) are dropped: they
//! constrain nothing. A keyword that does constrain values but that strict mode cannot express
//! (`patternProperties`, `minLength`, `allOf`, a free-form map, ...) is an error naming it and
//! its JSON path, never silently lost.

use std::fmt;

use serde_json::{Map, Value};

/// A schema strict mode cannot express.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StrictError {
    /// Where, as a JSON Pointer fragment (`#/properties/tags`).
    pub(crate) path: String,
    /// What is wrong there.
    pub(crate) problem: String,
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at `{}`: {}", self.path, self.problem)
    }
}

/// Keywords kept as they are (their values are not schemas).
const KEPT: &[&str] = &[
    "type",
    "enum",
    "const",
    "description",
    "title",
    "$ref",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Annotations strict mode does not accept; dropping them changes no constraint.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
];

/// String formats strict mode accepts.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Adapts a tool's parameters (or a structured-output schema): the root must be an object.
pub(crate) fn strict_schema(schema: &Value) -> Result<Value, StrictError> {
    let mut path = String::from("#");
    let is_object = schema
        .as_object()
        .is_some_and(|map| has_type(map, "object") || map.contains_key("properties"));
    if !is_object {
        return Err(StrictError {
            path,
            problem:
                "the root of a strict schema must be an object schema (`\"type\": \"object\"`)"
                    .to_owned(),
        });
    }
    adapt(schema, &mut path, true)
}

fn adapt(schema: &Value, path: &mut String, root: bool) -> Result<Value, StrictError> {
    let map = match schema {
        Value::Object(map) => map,
        Value::Bool(_) => {
            return Err(error(
                path,
                "a boolean schema (any value or none) cannot be expressed in strict mode",
            ));
        }
        _ => return Err(error(path, "a schema must be a JSON object")),
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            key if KEPT.contains(&key) => {
                out.insert(key.to_owned(), value.clone());
            }
            key if DROPPED.contains(&key) => {}
            "format" => {
                let known = value
                    .as_str()
                    .is_some_and(|format| FORMATS.contains(&format));
                if known && has_type(map, "string") {
                    out.insert(key.clone(), value.clone());
                }
            }
            // Rebuilt below with the object rules.
            "properties" | "required" | "additionalProperties" => {}
            "items" => {
                if !value.is_object() {
                    return Err(unsupported(
                        path,
                        key,
                        "tuple `items` (an array of schemas)",
                    ));
                }
                let items = within(path, &["items"], |path| adapt(value, path, false))?;
                out.insert(key.clone(), items);
            }
            "anyOf" | "oneOf" => {
                let Some(branches) = value.as_array() else {
                    return Err(error(path, &format!("`{key}` must be an array of schemas")));
                };
                if key == "oneOf" && map.contains_key("anyOf") {
                    return Err(unsupported(path, key, "`oneOf` next to `anyOf`"));
                }
                let branches = branches
                    .iter()
                    .enumerate()
                    .map(|(i, branch)| {
                        within(path, &[key, &i.to_string()], |path| {
                            adapt(branch, path, false)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                out.insert("anyOf".to_owned(), Value::Array(branches));
            }
            "$defs" | "definitions" => {
                let Some(defs) = value.as_object() else {
                    return Err(error(
                        path,
                        &format!("`{key}` must be an object of schemas"),
                    ));
                };
                let mut adapted = Map::new();
                for (name, def) in defs {
                    adapted.insert(
                        name.clone(),
                        within(path, &[key, name], |path| adapt(def, path, false))?,
                    );
                }
                out.insert(key.clone(), Value::Object(adapted));
            }
            other => return Err(unsupported(path, other, "")),
        }
    }
    if has_type(map, "object") || map.contains_key("properties") {
        object(map, &mut out, path, root)?;
    }
    Ok(Value::Object(out))
}

/// The object rules: every property required, optional ones nullable, nothing else allowed.
fn object(
    map: &Map<String, Value>,
    out: &mut Map<String, Value>,
    path: &mut String,
    root: bool,
) -> Result<(), StrictError> {
    match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(_)
            if map
                .get("properties")
                .is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty())) =>
        {
            return Err(unsupported(
                path,
                "additionalProperties",
                "properties beyond the declared ones",
            ));
        }
        Some(_) => {
            return Err(error(
                path,
                "a free-form map (`additionalProperties`) cannot be expressed in strict mode",
            ));
        }
    }
    let properties = match map.get("properties") {
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err(error(path, "`properties` must be an object of schemas")),
        // A root without properties takes no parameters; elsewhere it is a free-form object.
        None if root || map.get("additionalProperties") == Some(&Value::Bool(false)) => &Map::new(),
        None => {
            return Err(error(
                path,
                "an object without declared `properties` (a free-form object) cannot be expressed in strict mode",
            ));
        }
    };
    let required: Vec<&str> = match map.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err(error(path, "`required` must be an array of names")),
    };
    let mut adapted = Map::new();
    for (name, property) in properties {
        let schema = within(path, &["properties", name], |path| {
            adapt(property, path, false)
        })?;
        let schema = if required.contains(&name.as_str()) {
            schema
        } else {
            nullable(schema)
        };
        adapted.insert(name.clone(), schema);
    }
    out.insert(
        "required".to_owned(),
        Value::Array(
            properties
                .keys()
                .map(|name| Value::String(name.clone()))
                .collect(),
        ),
    );
    out.insert("properties".to_owned(), Value::Object(adapted));
    out.insert("additionalProperties".to_owned(), Value::Bool(false));
    Ok(())
}

/// The schema, also accepting `null`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if is_nullable(&map) {
        return Value::Object(map);
    }
    let null = || serde_json::json!({ "type": "null" });
    if map.contains_key("type")
        && !map.contains_key("$ref")
        && !map.contains_key("anyOf")
        && !map.contains_key("const")
    {
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.push(Value::Null);
        }
        match map.get_mut("type") {
            Some(Value::Array(types)) => types.push(Value::String("null".to_owned())),
            Some(kind) => *kind = Value::Array(vec![kind.take(), Value::String("null".to_owned())]),
            None => {}
        }
        return Value::Object(map);
    }
    if map.len() == 1
        && let Some(Value::Array(branches)) = map.get_mut("anyOf")
    {
        branches.push(null());
        return Value::Object(map);
    }
    // Keep the description where the model reads it: on the property, not inside a branch.
    let mut wrapper = Map::new();
    if let Some(description) = map.remove("description") {
        wrapper.insert("description".to_owned(), description);
    }
    wrapper.insert(
        "anyOf".to_owned(),
        Value::Array(vec![Value::Object(map), null()]),
    );
    Value::Object(wrapper)
}

fn is_nullable(map: &Map<String, Value>) -> bool {
    let null_type = |kind: &Value| kind.as_str() == Some("null");
    match map.get("type") {
        Some(Value::Array(types)) if types.iter().any(null_type) => return true,
        Some(kind) if null_type(kind) => return true,
        _ => {}
    }
    map.get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| {
            branches
                .iter()
                .any(|branch| branch.get("type").is_some_and(null_type))
        })
}

fn has_type(map: &Map<String, Value>, name: &str) -> bool {
    match map.get("type") {
        Some(Value::String(kind)) => kind == name,
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind.as_str() == Some(name)),
        _ => false,
    }
}

/// Runs `f` with `segments` appended to the path (JSON Pointer escaped), then restores it.
fn within<T>(path: &mut String, segments: &[&str], f: impl FnOnce(&mut String) -> T) -> T {
    let length = path.len();
    for segment in segments {
        path.push('/');
        path.push_str(&segment.replace('~', "~0").replace('/', "~1"));
    }
    let result = f(path);
    path.truncate(length);
    result
}

fn error(path: &str, problem: &str) -> StrictError {
    StrictError {
        path: path.to_owned(),
        problem: problem.to_owned(),
    }
}

fn unsupported(path: &str, keyword: &str, what: &str) -> StrictError {
    let what = if what.is_empty() {
        String::new()
    } else {
        format!(" ({what})")
    };
    error(
        path,
        &format!("the keyword `{keyword}`{what} is not supported by OpenAI strict mode"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city."},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer", "format": "uint32", "minimum": 0, "default": 1},
                "when": {"type": "string", "format": "date"},
                "place": {"$ref": "#/$defs/Place", "description": "Where."},
                "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                "note": {"type": ["string", "null"]}
            },
            "required": ["city"],
            "$defs": {
                "Place": {"type": "object", "properties": {"lat": {"type": "number", "format": "double"}}, "required": ["lat"]}
            }
        });
        assert_eq!(
            strict_schema(&schema).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "unit": {"type": ["string", "null"], "enum": ["c", "f", null]},
                    "days": {"type": ["integer", "null"], "minimum": 0},
                    "when": {"type": ["string", "null"], "format": "date"},
                    "place": {"description": "Where.", "anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
                    "kind": {"anyOf": [{"const": "a"}, {"const": "b"}, {"type": "null"}]},
                    "note": {"type": ["string", "null"]}
                },
                "required": ["city", "days", "kind", "note", "place", "unit", "when"],
                "additionalProperties": false,
                "$defs": {
                    "Place": {
                        "type": "object",
                        "properties": {"lat": {"type": "number"}},
                        "required": ["lat"],
                        "additionalProperties": false
                    }
                }
            })
        );
    }

    #[test]
    fn unsupported_keywords_name_their_path() {
        let schema = json!({
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "object", "patternProperties": {"^x": {}}}}}
        });
        let error = strict_schema(&schema).unwrap_err();
        assert_eq!(error.path, "#/properties/tags/items");
        assert!(error.to_string().contains("`patternProperties`"), "{error}");
        let map = json!({"type": "object", "properties": {"a/b": {"type": "object", "additionalProperties": {"type": "string"}}}});
        assert_eq!(strict_schema(&map).unwrap_err().path, "#/properties/a~1b");
        assert_eq!(
            strict_schema(&json!({"type": "string"})).unwrap_err().path,
            "#"
        );
        let any = json!({"type": "object", "properties": {"v": true}});
        assert_eq!(strict_schema(&any).unwrap_err().path, "#/properties/v");
    }

    #[test]
    fn a_root_without_properties_takes_no_parameters() {
        assert_eq!(
            strict_schema(&json!({"type": "object"})).unwrap(),
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }
}
