//! Pages written by others, served from localhost for the browser tests: Python's HTML
//! documentation (Debian's `python3-doc`), Swagger UI (npm's `swagger-ui-dist`, a React
//! app) over a small live API it can call, and jQuery UI's widget demos (Debian's
//! `libjs-jquery-ui-docs`: a modal form with validation, date picker, select menus,
//! autocomplete, styled radios). `harness/install-test-deps.sh` installs them; without them
//! the tests that need them fail, saying so.

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

/// Where Debian's `python3-doc` puts the HTML documentation.
const PYTHON_DOCS: &str = "/usr/share/doc/python3/html";
/// Where Debian's `libjs-jquery-ui-docs` puts jQuery UI's demos.
const JQUERY_UI_DEMOS: &str = "/usr/share/doc/libjs-jquery-ui-docs/examples";
/// The scripts the demos load by absolute path (Debian's `libjs-*` packages).
const DEBIAN_JS: &str = "/usr/share/javascript";
/// RequireJS's folder: the demos load its `require.js` as `/usr/share/nodejs/require.js`.
const REQUIRE_JS_DIR: &str = "/usr/share/nodejs/requirejs";

/// Where `install-test-deps.sh` installs the npm packages the tests use.
pub fn npm_modules() -> PathBuf {
    std::env::var_os("COVE_TEST_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-deps/node_modules")
        })
}

#[derive(Clone)]
struct Roots {
    python: PathBuf,
    swagger: PathBuf,
}

/// Fails, naming the package, when one of the pages' files is missing.
fn require(path: &str, package: &str) -> Result<()> {
    if !Path::new(path).exists() {
        bail!("{path} is missing: install Debian's {package} (harness/install-test-deps.sh does)");
    }
    Ok(())
}

/// A running site of real pages.
pub struct RealSite {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl RealSite {
    /// Serves the pages on a free localhost port; fails when a package is not installed.
    pub async fn start() -> Result<RealSite> {
        require(&format!("{PYTHON_DOCS}/library/os.html"), "python3-doc")?;
        let python = PathBuf::from(PYTHON_DOCS);
        let swagger = npm_modules().join("swagger-ui-dist");
        if !swagger.join("swagger-ui-bundle.js").is_file() {
            bail!(
                "swagger-ui-dist is missing at {}: run harness/install-test-deps.sh",
                swagger.display()
            );
        }
        require(
            &format!("{JQUERY_UI_DEMOS}/dialog/modal-form.html"),
            "libjs-jquery-ui-docs",
        )?;
        require(
            &format!("{DEBIAN_JS}/jquery-ui/ui/widgets/dialog.js"),
            "libjs-jquery-ui",
        )?;
        require(&format!("{REQUIRE_JS_DIR}/require.js"), "node-requirejs")?;
        let roots = Roots { python, swagger };
        let app = Router::new()
            .route("/python/{*path}", get(python_file))
            .route("/swagger/swagger-initializer.js", get(swagger_initializer))
            .route("/swagger/{*path}", get(swagger_file))
            .route("/jquery-ui/{*path}", get(jquery_ui_file))
            .route("/usr/share/javascript/{*path}", get(debian_js_file))
            .route(
                "/usr/share/nodejs/require.js",
                get(|| async { serve_file(Path::new(REQUIRE_JS_DIR), "require.js").await }),
            )
            .route("/api/openapi.json", get(|| async { axum::Json(openapi()) }))
            .route("/api/pets", get(pets))
            .route("/api/pets/{id}", get(pet))
            .with_state(roots);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(RealSite { addr, task })
    }

    /// The URL of `path` on the site (`python/library/os.html`, `swagger/index.html`,
    /// `jquery-ui/dialog/modal-form.html`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }
}

impl Drop for RealSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn python_file(State(roots): State<Roots>, UrlPath(path): UrlPath<String>) -> Response {
    serve_file(&roots.python, &path).await
}

async fn jquery_ui_file(UrlPath(path): UrlPath<String>) -> Response {
    serve_file(Path::new(JQUERY_UI_DEMOS), &path).await
}

async fn debian_js_file(UrlPath(path): UrlPath<String>) -> Response {
    serve_file(Path::new(DEBIAN_JS), &path).await
}

async fn swagger_file(State(roots): State<Roots>, UrlPath(path): UrlPath<String>) -> Response {
    serve_file(&roots.swagger, &path).await
}

/// Swagger UI pointed at the local API instead of the internet.
async fn swagger_initializer() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript")],
        r##"window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "/api/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout"
  });
};
"##,
    )
        .into_response()
}

async fn serve_file(root: &Path, path: &str) -> Response {
    let relative = Path::new(path);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    let file = root.join(relative);
    let Ok(bytes) = tokio::fs::read(&file).await else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mime = match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript",
        "css" => "text/css",
        "json" | "map" => "application/json",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        _ => "application/octet-stream",
    };
    ([(header::CONTENT_TYPE, mime)], bytes).into_response()
}

fn all_pets() -> Vec<Value> {
    vec![
        json!({"id": 1, "name": "Rex", "tag": "dog"}),
        json!({"id": 2, "name": "Tom", "tag": "cat"}),
        json!({"id": 3, "name": "Nemo", "tag": "fish"}),
    ]
}

async fn pets(Query(query): Query<std::collections::HashMap<String, String>>) -> Response {
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(usize::MAX);
    axum::Json(all_pets().into_iter().take(limit).collect::<Vec<_>>()).into_response()
}

async fn pet(UrlPath(id): UrlPath<String>) -> Response {
    let wanted = id.parse::<u64>().ok();
    match all_pets()
        .into_iter()
        .find(|p| wanted.is_some() && p["id"].as_u64() == wanted)
    {
        Some(pet) => axum::Json(pet).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"code": 404, "message": format!("no pet {id}")})),
        )
            .into_response(),
    }
}

/// The API's OpenAPI document, as Swagger UI reads it.
fn openapi() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Pet Shop", "version": "1.0.0", "description": "A small live API for the browser tests."},
        "paths": {
            "/api/pets": {"get": {
                "summary": "List all pets",
                "operationId": "listPets",
                "parameters": [{"name": "limit", "in": "query", "description": "How many pets to return", "required": false, "schema": {"type": "integer"}}],
                "responses": {"200": {"description": "The pets", "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}
            }},
            "/api/pets/{petId}": {"get": {
                "summary": "Info for a specific pet",
                "operationId": "showPetById",
                "parameters": [{"name": "petId", "in": "path", "required": true, "description": "The id of the pet to retrieve", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "The pet", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                              "404": {"description": "No such pet"}}
            }}
        },
        "components": {"schemas": {"Pet": {"type": "object", "required": ["id", "name"], "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"}, "tag": {"type": "string"}}}}}
    })
}

/// Fails with the reason when the site cannot start (a package missing).
pub async fn real_site() -> RealSite {
    RealSite::start()
        .await
        .context("the real pages")
        .unwrap_or_else(|e| panic!("{e:#}"))
}
