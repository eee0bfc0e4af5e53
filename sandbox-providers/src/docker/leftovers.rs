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
    /// What installation `installation` made and no sandbox in `known` (by name) owns,
    /// made `min_age_secs` ago or more (younger, it may be a sandbox being made now, which
    /// is recorded only once it answers).
    pub async fn leftovers(
        &self,
        installation: &str,
        known: &[String],
        min_age_secs: i64,
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
            let young = container
                .created
                .is_some_and(|at| now_secs().saturating_sub(at) < min_age_secs);
            if !known.contains(&sandbox) && !young {
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
            let young = network
                .created
                .as_deref()
                .and_then(rfc3339_secs)
                .is_some_and(|at| now_secs().saturating_sub(at) < min_age_secs);
            if !known.contains(&sandbox) && !young {
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

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Seconds since the epoch of an RFC 3339 time as Docker writes it
/// (`2026-11-26T23:52:48.557024204Z`, or with an offset of +00:00).
fn rfc3339_secs(at: &str) -> Option<i64> {
    let (date, time) = at.split_once('T')?;
    let mut ymd = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let hms: Vec<i64> = time
        .get(..8)?
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, min, s] = hms[..] else { return None };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + min * 60 + s)
}

fn label_of(labels: Option<&HashMap<String, String>>, key: &str) -> String {
    labels.and_then(|l| l.get(key)).cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docker::SNAPSHOT_OF;

    #[test]
    fn docker_times_read_as_seconds() {
        assert_eq!(rfc3339_secs("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            rfc3339_secs("2026-11-26T23:52:48.557024204Z"),
            Some(1_795_737_168)
        );
        assert_eq!(rfc3339_secs("2000-02-29T12:00:00+00:00"), Some(951_825_600));
        assert_eq!(rfc3339_secs("yesterday"), None);
    }

    #[test]
    fn a_missing_label_reads_empty() {
        let labels = HashMap::from([(LABEL.to_string(), "b1".to_string())]);
        assert_eq!(label_of(Some(&labels), LABEL), "b1");
        assert_eq!(label_of(Some(&labels), SNAPSHOT_OF), "");
        assert_eq!(label_of(None, LABEL), "");
    }
}
