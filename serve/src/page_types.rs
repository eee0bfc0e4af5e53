//! The page's types, generated from the protocol's JSON schemas: `page/protocol.d.ts`, which
//! the modules name in their JSDoc and `tsc` checks them against. A test keeps the file in
//! step with the protocol (`COVE_WRITE_PAGE_TYPES=1 cargo test -p cove-serve` rewrites it).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde_json::Value;

/// The protocol's types the page reads, each with the schemas it refers to.
pub(crate) fn declarations() -> String {
    let mut defs: BTreeMap<String, Value> = BTreeMap::new();
    let mut roots: Vec<(String, Value)> = Vec::new();
    root::<cove_protocol::events::RunEvent>(&mut roots, &mut defs);
    root::<cove_protocol::serve::ThreadView>(&mut roots, &mut defs);
    root::<cove_protocol::serve::ThreadList>(&mut roots, &mut defs);
    root::<cove_protocol::serve::ThreadCheckpoints>(&mut roots, &mut defs);
    root::<cove_protocol::checkpoints::CheckpointDiff>(&mut roots, &mut defs);
    root::<cove_protocol::serve::ForkAnswer>(&mut roots, &mut defs);
    let mut out = String::from(
        "// Generated from cove-protocol's JSON schemas by cove-serve's tests\n\
         // (serve/src/page_types.rs): do not edit; COVE_WRITE_PAGE_TYPES=1 cargo test -p\n\
         // cove-serve writes it again.\n",
    );
    for (name, def) in defs {
        if !roots.iter().any(|(n, _)| *n == name) {
            roots.push((name, def));
        }
    }
    for (name, schema) in &roots {
        out.push('\n');
        if let Some(doc) = schema["description"].as_str() {
            out.push_str(&doc_comment(doc, ""));
        }
        out.push_str(&format!("export type {name} = {};\n", type_of(schema, "")));
    }
    out
}

fn root<T: JsonSchema>(roots: &mut Vec<(String, Value)>, defs: &mut BTreeMap<String, Value>) {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(found) = schema["$defs"].as_object() {
        for (name, def) in found {
            defs.insert(name.clone(), def.clone());
        }
    }
    let name = schema["title"].as_str().unwrap_or("Unnamed").to_string();
    roots.retain(|(n, _)| *n != name);
    roots.push((name, schema));
}

fn doc_comment(doc: &str, indent: &str) -> String {
    let lines: Vec<&str> = doc.lines().collect();
    if lines.len() == 1 {
        return format!("{indent}/** {} */\n", lines[0]);
    }
    let mut out = format!("{indent}/**\n");
    for line in lines {
        out.push_str(&format!("{indent} * {line}\n"));
    }
    out.push_str(&format!("{indent} */\n"));
    out
}

/// The TypeScript type of a schema.
fn type_of(schema: &Value, indent: &str) -> String {
    if schema == &Value::Bool(true) {
        return "unknown".into();
    }
    if let Some(target) = schema["$ref"].as_str() {
        return target.rsplit('/').next().unwrap_or("unknown").to_string();
    }
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    if let Some(values) = schema["enum"].as_array() {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = schema[key].as_array()
            && schema.get("properties").is_none()
        {
            return variants
                .iter()
                .map(|v| type_of(v, indent))
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    let kinds: Vec<&str> = match &schema["type"] {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if kinds.is_empty() {
        return "unknown".into();
    }
    kinds
        .iter()
        .map(|kind| match *kind {
            "string" => "string".to_string(),
            "integer" | "number" => "number".to_string(),
            "boolean" => "boolean".to_string(),
            "null" => "null".to_string(),
            "array" => format!("Array<{}>", type_of(&schema["items"], indent)),
            "object" => object_type(schema, indent),
            other => format!("unknown /* {other} */"),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// An object's properties, and the variants its `oneOf` adds (a flattened enum).
fn object_type(schema: &Value, indent: &str) -> String {
    let inner = format!("{indent}  ");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut body = String::from("{\n");
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            if let Some(doc) = property["description"].as_str() {
                body.push_str(&doc_comment(doc, &inner));
            }
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            body.push_str(&format!(
                "{inner}{name}{optional}: {};\n",
                type_of(property, &inner)
            ));
        }
    } else if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        return format!("Record<string, {}>", type_of(values, indent));
    }
    body.push_str(&format!("{indent}}}"));
    match schema["oneOf"].as_array() {
        Some(variants) => format!(
            "{body} & (\n{}\n{indent})",
            variants
                .iter()
                .map(|v| format!("{inner}| {}", type_of(v, &inner)))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        None => body,
    }
}
