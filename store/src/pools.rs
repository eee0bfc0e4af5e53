//! The members of warm pools: sandboxes made ahead of use, each handed out whole to one
//! sandbox name (in one transaction, so two claims never get the same member).

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::sandboxes::{ManagedSandbox, SANDBOX_COLUMNS, insert_sandbox, sandbox_row};
use super::{Store, StoreError};

/// A sandbox a pool made ahead of use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolMember {
    /// Its own name, under which its resources are made (`pool-<pool>-<id>`).
    pub name: String,
    pub pool: String,
    /// `docker` or `kubernetes`.
    pub provider: String,
    /// Empty until it is made.
    pub container_id: String,
    pub url: Option<String>,
    /// The token it starts with; whoever claims it gives its daemon another.
    #[serde(skip)]
    pub boot_token: String,
    pub image: String,
    /// What the provider needs to make it again (a Kubernetes Pod's plan).
    pub spec: Option<String>,
    /// Made and answering; false while it is being made.
    pub ready: bool,
    pub created_at: i64,
}

const MEMBER_COLUMNS: &str =
    "name, pool, provider, container_id, url, boot_token, image, spec, ready, created_at";

fn member_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PoolMember> {
    Ok(PoolMember {
        name: r.get(0)?,
        pool: r.get(1)?,
        provider: r.get(2)?,
        container_id: r.get(3)?,
        url: r.get(4)?,
        boot_token: r.get(5)?,
        image: r.get(6)?,
        spec: r.get(7)?,
        ready: r.get(8)?,
        created_at: r.get(9)?,
    })
}

impl Store {
    /// Records a member as it starts being made (so fills at once count it, and a fill
    /// that dies leaves a record to tidy).
    pub fn add_pool_member(&self, m: &PoolMember) -> Result<(), StoreError> {
        self.conn().execute(
            &format!("INSERT INTO pool_members ({MEMBER_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
            params![
                m.name,
                m.pool,
                m.provider,
                m.container_id,
                m.url,
                m.boot_token,
                m.image,
                m.spec,
                m.ready,
                m.created_at
            ],
        )?;
        Ok(())
    }

    /// Records that member `name` is made and answers at `url`.
    pub fn set_pool_member_ready(
        &self,
        name: &str,
        container_id: &str,
        url: Option<&str>,
        spec: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn().execute(
            "UPDATE pool_members SET ready = 1, container_id = ?2, url = ?3, spec = COALESCE(?4, spec) WHERE name = ?1",
            params![name, container_id, url, spec],
        )?;
        Ok(())
    }

    /// The members of `pool` (of every pool when none), oldest first.
    pub fn pool_members(&self, pool: Option<&str>) -> Result<Vec<PoolMember>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {MEMBER_COLUMNS} FROM pool_members WHERE ?1 IS NULL OR pool = ?1 ORDER BY created_at, name"
        ))?;
        let rows = stmt
            .query_map(params![pool], member_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Every sandbox and every pool member, read at one instant: a take moves a member from
    /// one to the other in one transaction, so it is in exactly one of them.
    pub fn sandboxes_and_pool_members(
        &self,
    ) -> Result<(Vec<ManagedSandbox>, Vec<PoolMember>), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let made = tx
            .prepare(&format!(
                "SELECT {SANDBOX_COLUMNS} FROM sandboxes ORDER BY name"
            ))?
            .query_map([], sandbox_row)?
            .collect::<Result<Vec<_>, _>>()?;
        let members = tx
            .prepare(&format!(
                "SELECT {MEMBER_COLUMNS} FROM pool_members ORDER BY created_at, name"
            ))?
            .query_map([], member_row)?
            .collect::<Result<Vec<_>, _>>()?;
        tx.commit()?;
        Ok((made, members))
    }

    /// Forgets member `name`; false when no member has that name (it was claimed).
    pub fn remove_pool_member(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn()
            .execute("DELETE FROM pool_members WHERE name = ?1", params![name])?
            > 0)
    }

    /// Hands the oldest ready member of `pool` made at or after `made_after` (ms) to a new
    /// sandbox: `sandbox` makes its record from the member, which is stored in the same
    /// transaction that takes the member out of the pool. None when the pool has none.
    pub fn claim_pool_member(
        &self,
        pool: &str,
        made_after: i64,
        sandbox: impl FnOnce(&PoolMember) -> ManagedSandbox,
    ) -> Result<Option<(PoolMember, ManagedSandbox)>, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let member = tx
            .query_row(
                &format!(
                    "SELECT {MEMBER_COLUMNS} FROM pool_members
                     WHERE pool = ?1 AND ready = 1 AND created_at >= ?2
                     ORDER BY created_at, name LIMIT 1"
                ),
                params![pool, made_after],
                member_row,
            )
            .optional()?;
        let Some(member) = member else {
            return Ok(None);
        };
        tx.execute(
            "DELETE FROM pool_members WHERE name = ?1",
            params![member.name],
        )?;
        let made = sandbox(&member);
        insert_sandbox(&tx, &made)?;
        tx.commit()?;
        Ok(Some((member, made)))
    }
}
