//! Sandboxes a provider made for Cove (Docker containers, Kubernetes Pods), so later
//! commands find them.

use rusqlite::params;
use serde::Serialize;

use super::{Store, StoreError};

/// A sandbox a provider made for Cove (a Docker container, a Kubernetes Pod).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManagedSandbox {
    pub name: String,
    /// `docker` or `kubernetes`.
    pub provider: String,
    pub container_id: String,
    /// Where coved answered at its last start.
    pub url: Option<String>,
    #[serde(skip)]
    pub token: String,
    pub image: String,
    pub created_at: i64,
    /// What the provider needs to make it again (JSON; a Kubernetes Pod's plan).
    pub spec: Option<String>,
    /// The token its container or Pod starts with; its daemon is given `token` after each
    /// start. None for a sandbox made before Cove rotated tokens (it keeps `token` there).
    #[serde(skip)]
    pub boot_token: Option<String>,
    /// The name its resources were made under, when not its own (a pool member's).
    pub made_as: Option<String>,
}

impl ManagedSandbox {
    /// The token its container or Pod is started with.
    pub fn start_token(&self) -> &str {
        self.boot_token.as_deref().unwrap_or(&self.token)
    }

    /// The name its container, network or Pod carry.
    pub fn resource_name(&self) -> &str {
        self.made_as.as_deref().unwrap_or(&self.name)
    }
}

/// The columns of `sandboxes`, in the order [`sandbox_row`] reads them.
pub(crate) const SANDBOX_COLUMNS: &str =
    "name, provider, container_id, url, token, image, created_at, spec, boot_token, made_as";

/// A `sandboxes` row read with [`SANDBOX_COLUMNS`].
pub(crate) fn sandbox_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ManagedSandbox> {
    Ok(ManagedSandbox {
        name: r.get(0)?,
        provider: r.get(1)?,
        container_id: r.get(2)?,
        url: r.get(3)?,
        token: r.get(4)?,
        image: r.get(5)?,
        created_at: r.get(6)?,
        spec: r.get(7)?,
        boot_token: r.get(8)?,
        made_as: r.get(9)?,
    })
}

/// Records `s` through `conn`.
pub(crate) fn insert_sandbox(
    conn: &rusqlite::Connection,
    s: &ManagedSandbox,
) -> Result<(), StoreError> {
    conn.execute(
        &format!(
            "INSERT INTO sandboxes ({SANDBOX_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        ),
        params![
            s.name,
            s.provider,
            s.container_id,
            s.url,
            s.token,
            s.image,
            s.created_at,
            s.spec,
            s.boot_token,
            s.made_as
        ],
    )?;
    Ok(())
}

impl Store {
    /// Records a sandbox a provider made.
    pub fn add_sandbox(&self, s: &ManagedSandbox) -> Result<(), StoreError> {
        insert_sandbox(&self.conn(), s)
    }

    /// Every sandbox a provider made, by name.
    pub fn sandboxes(&self) -> Result<Vec<ManagedSandbox>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {SANDBOX_COLUMNS} FROM sandboxes ORDER BY name"
        ))?;
        let rows = stmt
            .query_map([], sandbox_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// The sandbox a provider made under `name`.
    pub fn sandbox(&self, name: &str) -> Result<Option<ManagedSandbox>, StoreError> {
        Ok(self.sandboxes()?.into_iter().find(|s| s.name == name))
    }

    /// Records where a managed sandbox answers since its last start.
    pub fn set_sandbox_url(&self, name: &str, url: Option<&str>) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE sandboxes SET url = ?2 WHERE name = ?1",
            params![name, url],
        )?;
        Ok(())
    }

    /// Records what a provider needs to make sandbox `name` again (its plan, as JSON).
    pub fn set_sandbox_spec(&self, name: &str, spec: &str) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE sandboxes SET spec = ?2 WHERE name = ?1",
            params![name, spec],
        )?;
        Ok(())
    }

    /// This installation's id (made the first time it is asked for): what it makes on a
    /// cluster others share carries it, so it tidies only its own.
    pub fn installation_id(&self) -> Result<String, StoreError> {
        let conn = self.conn();
        conn.execute(
            "INSERT OR IGNORE INTO settings (key, value) VALUES ('installation', ?1)",
            params![super::new_id(16)],
        )?;
        Ok(conn.query_row(
            "SELECT value FROM settings WHERE key = 'installation'",
            [],
            |r| r.get(0),
        )?)
    }

    /// Forgets a managed sandbox.
    pub fn remove_sandbox(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn()
            .execute("DELETE FROM sandboxes WHERE name = ?1", params![name])?
            > 0)
    }
}
