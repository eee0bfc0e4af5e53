//! What this installation of Cove made in Docker and no longer knows: containers and
//! networks of sandboxes it forgot (a create that failed half-way, a removed database),
//! and snapshots of sandboxes that are gone, which no container is made from. Only what
//! carries this installation's label is ever listed: another user's Cove on the same
//! engine keeps its own.

use std::collections::HashMap;

use bollard::query_parameters::{ListContainersOptionsBuilder, ListNetworksOptionsBuilder};

use super::{Docker, DockerError, LABEL};

/// The label that names the Cove installation that made something.
pub const INSTALLATION: &str = "cove.installation";

/// Something Cove made in Docker that belongs to no sandbox it knows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Leftover {
    /// `container`, `network` or `snapshot`.
    pub kind: &'static str,
    /// Its name (a snapshot's reference).
    pub name: String,
    /// The sandbox it was made for.
    pub sandbox: String,
}

impl Docker {
    /// What installation `installation` made and no sandbox in `known` (by name) owns.
    pub async fn leftovers(
        &self,
        installation: &str,
        known: &[String],
    ) -> Result<Vec<Leftover>, DockerError> {
        let ours = HashMap::from([("label", vec![format!("{INSTALLATION}={installation}")])]);
        let client = self.client().await?;
        let containers = client
            .list_containers(Some(
                ListContainersOptionsBuilder::default()
                    .all(true)
                    .filters(&ours)
                    .build(),
            ))
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound("/containers/json".into())))?;
        let mut found = Vec::new();
        let mut used_images = Vec::new();
        for container in &containers {
            used_images.extend(container.image.clone());
            let sandbox = label_of(container.labels.as_ref(), LABEL);
            if !known.contains(&sandbox) {
                let name = container
                    .names
                    .as_ref()
                    .and_then(|n| n.first())
                    .map(|n| n.trim_start_matches('/').to_string())
                    .or_else(|| container.id.clone())
                    .unwrap_or_default();
                found.push(Leftover {
                    kind: "container",
                    name,
                    sandbox,
                });
            }
        }
        let networks = client
            .list_networks(Some(
                ListNetworksOptionsBuilder::default().filters(&ours).build(),
            ))
            .await
            .map_err(|e| self.failed(e, || DockerError::NotFound("/networks".into())))?;
        for network in networks {
            let sandbox = label_of(network.labels.as_ref(), LABEL);
            if !known.contains(&sandbox) {
                found.push(Leftover {
                    kind: "network",
                    name: network.name.unwrap_or_default(),
                    sandbox,
                });
            }
        }
        for snapshot in self.snapshots().await? {
            let gone = !known.contains(&snapshot.of);
            let unused = !used_images.contains(&snapshot.reference);
            if gone && unused && snapshot.installation.as_deref() == Some(installation) {
                found.push(Leftover {
                    kind: "snapshot",
                    name: snapshot.reference,
                    sandbox: snapshot.of,
                });
            }
        }
        Ok(found)
    }

    /// Removes a leftover.
    pub async fn remove_leftover(&self, leftover: &Leftover) -> Result<(), DockerError> {
        match leftover.kind {
            "container" => self.remove(&leftover.name).await,
            "network" => {
                let name = &leftover.name;
                self.client()
                    .await?
                    .remove_network(name)
                    .await
                    .map_err(|e| self.failed(e, || DockerError::NotFound(name.clone())))
            }
            _ => self.remove_snapshot(&leftover.name).await,
        }
    }
}

fn label_of(labels: Option<&HashMap<String, String>>, key: &str) -> String {
    labels.and_then(|l| l.get(key)).cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docker::SNAPSHOT_OF;

    #[test]
    fn a_missing_label_reads_empty() {
        let labels = HashMap::from([(LABEL.to_string(), "b1".to_string())]);
        assert_eq!(label_of(Some(&labels), LABEL), "b1");
        assert_eq!(label_of(Some(&labels), SNAPSHOT_OF), "");
        assert_eq!(label_of(None, LABEL), "");
    }
}
