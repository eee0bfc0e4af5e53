//! What the provider asks the API to make: a sandbox's Pod (restricted, its token from a
//! Secret the Pod owns, its workspace on a volume when it has one), the Secret and the
//! claim, with the names and labels that find them again.

use super::*;

/// The Pod of sandbox `name`.
pub fn pod_name(name: &str) -> String {
    format!("cove-{name}")
}

/// The Secret holding sandbox `name`'s token.
pub fn secret_name(name: &str) -> String {
    format!("cove-{name}-token")
}

/// The claim holding sandbox `name`'s workspace.
pub fn claim_name(name: &str) -> String {
    format!("cove-{name}-workspace")
}

/// Bytes as a Kubernetes quantity, in binary units where they are whole (4Gi, 512Mi).
pub fn bytes_quantity(bytes: i64) -> Quantity {
    const GI: i64 = 1 << 30;
    const MI: i64 = 1 << 20;
    Quantity(match bytes {
        b if b > 0 && b % GI == 0 => format!("{}Gi", b / GI),
        b if b > 0 && b % MI == 0 => format!("{}Mi", b / MI),
        b => b.to_string(),
    })
}

/// Cores as a Kubernetes quantity: `2`, or millicores (`500m`).
pub fn cpu_quantity(cores: f64) -> String {
    let milli = (cores * 1000.0).round() as i64;
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

pub(super) fn labels(name: &str, installation: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (SANDBOX_LABEL.to_string(), name.to_string()),
    ]);
    if let Some(installation) = installation {
        labels.insert(INSTALLATION_LABEL.to_string(), installation.to_string());
    }
    labels
}

pub(super) fn meta(name: String, plan: &PodPlan, sandbox: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(plan.namespace.clone()),
        labels: Some(labels(sandbox, plan.installation.as_deref())),
        ..ObjectMeta::default()
    }
}

/// The Pod of sandbox `name` as `plan` has it.
pub fn pod_manifest(name: &str, plan: &PodPlan) -> Pod {
    // What is asked is both the request and the limit; what is not gets the defaults.
    let cpu = plan.cpu.clone().map(Quantity);
    let memory = plan.memory_bytes.map(bytes_quantity);
    let quantities = |(cpu_default, memory_default): (&str, &str), ephemeral: &str| {
        BTreeMap::from([
            (
                "cpu".to_string(),
                cpu.clone().unwrap_or_else(|| Quantity(cpu_default.into())),
            ),
            (
                "memory".to_string(),
                memory
                    .clone()
                    .unwrap_or_else(|| Quantity(memory_default.into())),
            ),
            ("ephemeral-storage".to_string(), Quantity(ephemeral.into())),
        ])
    };
    let disk = plan.disk_bytes.map(bytes_quantity);
    let ephemeral_request = match plan.disk_bytes {
        Some(b) if b < (1 << 30) => bytes_quantity(b).0,
        _ => EPHEMERAL_STORAGE.0.to_string(),
    };
    let ephemeral_limit = disk.map_or_else(|| EPHEMERAL_STORAGE.1.to_string(), |q| q.0);
    let requests = quantities(DEFAULT_REQUESTS, &ephemeral_request);
    let limits = quantities(DEFAULT_LIMITS, &ephemeral_limit);
    let workspace = match plan.storage_bytes {
        Some(_) => Volume {
            name: "workspace".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(name),
                read_only: None,
            }),
            ..Volume::default()
        },
        None => Volume {
            name: "workspace".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: None,
                size_limit: Some(Quantity(WORKSPACE_ON_NODE.into())),
            }),
            ..Volume::default()
        },
    };
    let shm = Volume {
        name: "dshm".into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".into()),
            size_limit: Some(bytes_quantity(plan.shm_bytes)),
        }),
        ..Volume::default()
    };
    let container = Container {
        name: "coved".into(),
        image: Some(plan.image.clone()),
        ports: Some(vec![ContainerPort {
            container_port: i32::from(PORT),
            name: Some("coved".into()),
            ..ContainerPort::default()
        }]),
        // Where the controller's traces go, then the token.
        env: Some(
            cove_telemetry::daemon_env()
                .into_iter()
                .map(|(name, value)| EnvVar {
                    name,
                    value: Some(value),
                    ..EnvVar::default()
                })
                .chain([EnvVar {
                    name: "COVE_TOKEN".into(),
                    value_from: Some(EnvVarSource {
                        secret_key_ref: Some(SecretKeySelector {
                            name: secret_name(name),
                            key: TOKEN_KEY.into(),
                            optional: None,
                        }),
                        ..EnvVarSource::default()
                    }),
                    ..EnvVar::default()
                }])
                .collect(),
        ),
        resources: Some(ResourceRequirements {
            requests: Some(requests),
            limits: Some(limits),
            ..ResourceRequirements::default()
        }),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/health".into()),
                port: IntOrString::Int(i32::from(PORT)),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(2),
            ..Probe::default()
        }),
        liveness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/health".into()),
                port: IntOrString::Int(i32::from(PORT)),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(15),
            failure_threshold: Some(4),
            ..Probe::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                add: None,
            }),
            run_as_non_root: Some(true),
            ..SecurityContext::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "workspace".into(),
                mount_path: "/workspace".into(),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "dshm".into(),
                mount_path: "/dev/shm".into(),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    };
    Pod {
        metadata: meta(pod_name(name), plan, name),
        spec: Some(PodSpec {
            containers: vec![container],
            volumes: Some(vec![workspace, shm]),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(AGENT_UID),
                run_as_group: Some(AGENT_UID),
                fs_group: Some(AGENT_UID),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".into(),
                    localhost_profile: None,
                }),
                ..PodSecurityContext::default()
            }),
            automount_service_account_token: Some(false),
            restart_policy: Some("Always".into()),
            active_deadline_seconds: plan.deadline_secs,
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// The Secret of sandbox `name`'s token, owned by its Pod.
pub fn secret_manifest(name: &str, plan: &PodPlan, token: &str, owner: &Pod) -> Secret {
    let mut metadata = meta(secret_name(name), plan, name);
    metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod_name(name),
        uid: owner.metadata.uid.clone().unwrap_or_default(),
        block_owner_deletion: Some(true),
        controller: Some(true),
    }]);
    Secret {
        metadata,
        string_data: Some(BTreeMap::from([(TOKEN_KEY.to_string(), token.to_string())])),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

/// The claim of sandbox `name`'s workspace.
pub fn claim_manifest(name: &str, plan: &PodPlan, bytes: i64) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: meta(claim_name(name), plan, name),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            data_source: plan
                .restore_from
                .as_ref()
                .map(|snapshot| TypedLocalObjectReference {
                    api_group: Some(super::SNAPSHOT_GROUP.into()),
                    kind: "VolumeSnapshot".into(),
                    name: snapshot.clone(),
                }),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    bytes_quantity(bytes),
                )])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}
