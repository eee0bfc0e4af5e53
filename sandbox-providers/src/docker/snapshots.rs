//! Snapshots of whole Docker sandboxes: an image of the container's filesystem (what the
//! agent installed outside the workspace included), committed while the engine holds the
//! container paused so it is read at one instant, labelled with the sandbox it came from.
//! A new sandbox can be made from one; the token of the sandbox it came from is left out.

use std::collections::HashMap;

use bollard::models::ContainerConfig;
use bollard::query_parameters::{
    CommitContainerOptionsBuilder, ListImagesOptionsBuilder, RemoveImageOptionsBuilder,
};

use super::{Docker, DockerError};

/// The label that names the sandbox a snapshot came from.
pub const SNAPSHOT_OF: &str = "cove.snapshot.of";

/// The repository snapshots of sandbox `name` go in (Docker wants it lower-case).
pub fn repository(name: &str) -> String {
    format!(
        "cove-snapshot/{}",
        name.to_ascii_lowercase().replace('_', "-")
    )
}

/// A snapshot: an image of a sandbox's whole filesystem.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Snapshot {
    /// `cove-snapshot/NAME:TAG`, what `--from` takes.
    pub reference: String,
    /// The sandbox it came from.
    pub of: String,
    /// When it was taken (seconds since the epoch).
    pub created: i64,
    /// Its size in bytes.
    pub size: i64,
    /// The Cove installation whose sandbox it came from.
    #[serde(skip)]
    pub installation: Option<String>,
}

impl Docker {
    /// Takes a snapshot of container `id` (sandbox `name`) as `cove-snapshot/NAME:TAG`;
    /// one `frozen` already (paused) is read as it is, others are held paused meanwhile.
    pub async fn snapshot(
        &self,
        id: &str,
        name: &str,
        tag: &str,
        frozen: bool,
    ) -> Result<String, DockerError> {
        let repo = repository(name);
        let options = CommitContainerOptionsBuilder::default()
            .container(id)
            .repo(&repo)
            .tag(tag)
            .comment(&format!("a snapshot of sandbox {name}"))
            .pause(!frozen)
            .build();
        let config = ContainerConfig {
            // The image must not carry the sandbox's token: each sandbox gets its own.
            env: Some(vec!["COVE_TOKEN=".to_string()]),
            labels: Some(HashMap::from([(SNAPSHOT_OF.to_string(), name.to_string())])),
            ..Default::default()
        };
        self.client()
            .await?
            .commit_container(options, config)
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound(id.to_string())))?;
        Ok(format!("{repo}:{tag}"))
    }

    /// Every snapshot, newest first.
    pub async fn snapshots(&self) -> Result<Vec<Snapshot>, DockerError> {
        let options = ListImagesOptionsBuilder::default()
            .filters(&HashMap::from([("label", vec![SNAPSHOT_OF])]))
            .build();
        let images = self
            .client()
            .await?
            .list_images(Some(options))
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound("/images/json".into())))?;
        let mut snapshots: Vec<Snapshot> = images
            .into_iter()
            .flat_map(|image| {
                let of = image.labels.get(SNAPSHOT_OF).cloned().unwrap_or_default();
                let installation = image.labels.get(super::INSTALLATION).cloned();
                image
                    .repo_tags
                    .iter()
                    .filter(|t| t.starts_with("cove-snapshot/"))
                    .map(|reference| Snapshot {
                        reference: reference.clone(),
                        of: of.clone(),
                        created: image.created,
                        size: image.size,
                        installation: installation.clone(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        snapshots.sort_by(|a, b| {
            b.created
                .cmp(&a.created)
                .then(a.reference.cmp(&b.reference))
        });
        Ok(snapshots)
    }

    /// Removes snapshot `reference` (refused while a sandbox is made from it).
    pub async fn remove_snapshot(&self, reference: &str) -> Result<(), DockerError> {
        let options = RemoveImageOptionsBuilder::default().force(false).build();
        self.client()
            .await?
            .remove_image(reference, Some(options), None)
            .await
            .map(|_| ())
            .map_err(|e| self.failed(e, || DockerError::NotFound(reference.to_string())))
    }
}
