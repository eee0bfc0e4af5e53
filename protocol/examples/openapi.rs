//! Prints the OpenAPI document of coved's API.
fn main() {
    let doc = cove_protocol::api::openapi_document(env!("CARGO_PKG_VERSION"));
    println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
}
