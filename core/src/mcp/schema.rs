//! MCP servers describe their tools' inputs in whatever JSON Schema they like; OpenAI and
//! Anthropic each refuse a whole request over one schema they dislike (a top-level `anyOf`,
//! an array without `items`, a `required` name that is not a property). This rewrites a
//! schema into the common ground both accept, keeping everything else as the server wrote it.

use serde_json::{Map, Value, json};

/// Keywords neither provider takes at the top of a tool's schema.
const TOP_LEVEL_COMBINATORS: [&str; 4] = ["anyOf", "oneOf", "allOf", "not"];

/// Deepest nesting kept; a deeper (or recursive-looking) schema is cut to "any value".
const MAX_DEPTH: usize = 24;

/// `schema` as a tool input schema both providers accept.
pub fn sanitize(schema: &Value) -> Value {
    let mut top = match schema {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let is_object = match top.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if !is_object {
        // A tool whose input is not an object cannot be called with named arguments at all.
        return json!({"type": "object", "properties": {}});
    }
    for key in ["$schema", "$id", "$comment", "title"] {
        top.remove(key);
    }
    // Branches at the top (a common way to say "either these fields or those") become one
    // object with every branch's properties, none of them required.
    let mut merged = match top.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut had_branches = false;
    for key in TOP_LEVEL_COMBINATORS {
        if let Some(Value::Array(branches)) = top.remove(key) {
            had_branches = true;
            for branch in branches {
                if let Some(Value::Object(props)) = branch.get("properties") {
                    for (name, prop) in props {
                        merged.entry(name.clone()).or_insert_with(|| prop.clone());
                    }
                }
            }
        }
    }
    top.remove("enum");
    top.remove("const");
    top.insert("type".into(), Value::String("object".into()));
    let properties: Map<String, Value> = merged
        .into_iter()
        .map(|(name, prop)| (name, clean(&prop, 1)))
        .collect();
    let required: Vec<Value> = match top.remove("required") {
        Some(Value::Array(names)) if !had_branches => names
            .into_iter()
            .filter(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
            .collect(),
        _ => Vec::new(),
    };
    if !required.is_empty() {
        top.insert("required".into(), Value::Array(required));
    }
    top.insert("properties".into(), Value::Object(properties));
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = top.remove(key) {
            let defs = defs
                .into_iter()
                .map(|(name, def)| (name, clean(&def, 1)))
                .collect();
            top.insert(key.into(), Value::Object(defs));
        }
    }
    Value::Object(top)
}

/// A nested schema made acceptable: booleans become objects, arrays get `items`, objects
/// get `properties`, and `required` names only properties that exist.
fn clean(schema: &Value, depth: usize) -> Value {
    let mut map = match schema {
        Value::Object(map) => map.clone(),
        // `true` (anything) and `false` (nothing) as subschemas: both providers want objects.
        _ => return json!({}),
    };
    if depth > MAX_DEPTH {
        return json!({});
    }
    map.remove("$schema");
    map.remove("$id");
    let types: Vec<String> = match map.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    if types.iter().any(|t| t == "array") && !map.contains_key("items") {
        map.insert("items".into(), json!({}));
    }
    if let Some(items) = map.get("items") {
        let items = match items {
            // Tuple form (draft 4-7): both providers want one schema.
            Value::Array(list) => list.first().map_or(json!({}), |i| clean(i, depth + 1)),
            other => clean(other, depth + 1),
        };
        map.insert("items".into(), items);
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        let props: Map<String, Value> = props
            .iter()
            .map(|(name, prop)| (name.clone(), clean(prop, depth + 1)))
            .collect();
        if let Some(Value::Array(required)) = map.get("required") {
            let kept: Vec<Value> = required
                .iter()
                .filter(|n| n.as_str().is_some_and(|n| props.contains_key(n)))
                .cloned()
                .collect();
            map.insert("required".into(), Value::Array(kept));
        }
        map.insert("properties".into(), Value::Object(props));
    } else if types.iter().any(|t| t == "object") {
        map.insert("properties".into(), json!({}));
        map.remove("required");
    }
    if let Some(Value::Object(extra)) = map.get("additionalProperties") {
        let extra = clean(&Value::Object(extra.clone()), depth + 1);
        map.insert("additionalProperties".into(), extra);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let branches = branches.iter().map(|b| clean(b, depth + 1)).collect();
            map.insert(key.into(), Value::Array(branches));
        }
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_branches_merge_and_nothing_is_required_of_them() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "anyOf": [
                {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
                {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            ]
        });
        let clean = sanitize(&schema);
        assert_eq!(
            clean,
            json!({"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}})
        );
    }

    #[test]
    fn nested_shapes_are_made_acceptable_and_the_rest_kept() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array"},
                "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
                "any": true,
                "opts": {"type": "object", "required": ["x"]},
                "mode": {"type": "string", "enum": ["a", "b"], "description": "how"},
                "deep": {"type": "object", "properties": {"k": {"type": ["array", "null"]}}, "required": ["k", "gone"]}
            },
            "required": ["tags", "missing"],
            "additionalProperties": false
        });
        let clean = sanitize(&schema);
        let p = &clean["properties"];
        assert_eq!(p["tags"], json!({"type": "array", "items": {}}));
        assert_eq!(
            p["pair"],
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(p["any"], json!({}));
        assert_eq!(p["opts"], json!({"type": "object", "properties": {}}));
        assert_eq!(
            p["mode"],
            json!({"type": "string", "enum": ["a", "b"], "description": "how"})
        );
        assert_eq!(p["deep"]["required"], json!(["k"]));
        assert_eq!(p["deep"]["properties"]["k"]["items"], json!({}));
        assert_eq!(clean["required"], json!(["tags"]));
        assert_eq!(clean["additionalProperties"], json!(false));
    }

    #[test]
    fn a_missing_or_non_object_schema_becomes_an_empty_object() {
        assert_eq!(
            sanitize(&json!(null)),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            sanitize(&json!({"type": "string"})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            sanitize(&json!({})),
            json!({"type": "object", "properties": {}})
        );
    }
}
