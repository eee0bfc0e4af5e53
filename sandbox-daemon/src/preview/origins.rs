//! Which origin a request is for, decided by its `Host`.
//!
//! Previewed content is untrusted (an app the agent cloned, a page it downloaded), so it never
//! shares an origin with the API and the takeover page: each app the agent serves is at
//! `p<port>-<id>.<base>`, the workspace's files at `files-<id>.<base>`, and everything else at
//! the daemon's own address. `<id>` is new at every start of the daemon, so an origin is never
//! reused by another sandbox or a later run (whose service workers a browser would otherwise
//! still run there). Browsers resolve `*.localhost` to loopback themselves, so locally the base
//! is `localhost` and no DNS is needed; behind a proxy the base is the host of
//! `--public-url`, and the operator points `*.<host>` at the daemon too.
//!
//! The same reading of `Host` guards against DNS rebinding: with a public URL, a request
//! naming any other host (an attacker's name that resolves to the sandbox) is refused, and
//! links are only ever built from a host that parsed as one.

use std::fmt;

use crate::net::{Authority, is_localhost_name, parse_port};

/// The base under which previews live when the daemon is reached on this machine.
const LOCAL_BASE: &str = "localhost";
/// The first label of the workspace files' origin.
const FILES_LABEL: &str = "files";

/// How people reach the daemon: `--public-url`, read once at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// `https` when TLS ends in front of the daemon.
    pub https: bool,
    pub authority: Authority,
    /// A path the proxy in front serves the daemon under (`/sandbox-7`), or empty.
    pub prefix: String,
}

impl PublicUrl {
    /// Parses `http(s)://host[:port][/prefix]`.
    pub fn parse(raw: &str) -> Result<PublicUrl, String> {
        let raw = raw.trim();
        let (https, rest) = if let Some(rest) = raw.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = raw.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(format!(
                "{raw:?} must start with http:// or https:// (e.g. https://sandbox-7.example.com)"
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) {
            return Err(format!("{raw:?} may not have a query or fragment"));
        }
        let authority = Authority::parse(authority)
            .ok_or_else(|| format!("{raw:?} does not name a host (and optional port)"))?;
        Ok(PublicUrl {
            https,
            authority,
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// The daemon's own base URL: where the API and the takeover page are.
    pub fn base(&self) -> String {
        format!(
            "{}://{}{}",
            if self.https { "https" } else { "http" },
            self.authority.to_url_authority(),
            self.prefix
        )
    }
}

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Site {
    /// The API, the takeover page, health: the daemon's own origin.
    Daemon,
    /// The workspace's files, read-only.
    Files,
    /// The server the agent runs on this port.
    App(u16),
    /// A preview origin of another sandbox, or of an earlier run of this one.
    Stale,
}

/// Why a request's `Host` is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRefusal {
    /// Not a host and optional port.
    Malformed,
    /// A host this daemon does not answer for (DNS rebinding, a wrong proxy setup).
    Misdirected { host: String, expected: String },
}

impl fmt::Display for HostRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostRefusal::Malformed => f.write_str("the Host header is not a host and port"),
            HostRefusal::Misdirected { host, expected } => write!(
                f,
                "this daemon answers for {expected}, not {host}; if a proxy in front of it changes the host, have it pass the Host the client used"
            ),
        }
    }
}

/// Why no preview link can be built for a caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoPreviewOrigin(String);

impl NoPreviewOrigin {
    fn no_subdomains(host: &str) -> NoPreviewOrigin {
        NoPreviewOrigin(format!(
            "previews need an origin of their own per app, and the daemon is reached as {host}, which has no subdomains to give them; start coved with --public-url http(s)://NAME[:PORT] where NAME and *.NAME lead to this daemon (or reach it on localhost)"
        ))
    }
}

/// Where links to previews point: a scheme, a base host and the port people use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewBase {
    pub https: bool,
    host: String,
    port: Option<u16>,
    id: String,
}

impl PreviewBase {
    fn origin(&self, label: &str) -> String {
        let scheme = if self.https { "https" } else { "http" };
        match self.port {
            Some(port) => format!("{scheme}://{label}-{}.{}:{port}", self.id, self.host),
            None => format!("{scheme}://{label}-{}.{}", self.id, self.host),
        }
    }

    /// The origin of the app on `port`.
    pub fn app(&self, port: u16) -> String {
        self.origin(&format!("p{port}"))
    }

    /// The origin of the workspace's files.
    pub fn files(&self) -> String {
        self.origin(FILES_LABEL)
    }
}

/// The daemon's origins, as configured.
#[derive(Debug, Clone)]
pub struct Origins {
    public: Option<PublicUrl>,
    /// This run's part of every preview host name.
    id: String,
}

impl Origins {
    /// Origins under `public` when set, else under `localhost`, marked with this run's `id`
    /// (lowercase letters and digits).
    pub fn new(public: Option<PublicUrl>, id: String) -> Origins {
        Origins { public, id }
    }

    /// The operator's public URL, if any.
    pub fn public(&self) -> Option<&PublicUrl> {
        self.public.as_ref()
    }

    /// Which site `host` (the request's `Host`) names. A request without one is for the
    /// daemon itself.
    pub fn site(&self, host: Option<&str>) -> Result<(Site, Option<Authority>), HostRefusal> {
        let Some(raw) = host else {
            return Ok((Site::Daemon, None));
        };
        let authority = Authority::parse(raw).ok_or(HostRefusal::Malformed)?;
        let name = authority.host.trim_end_matches('.');
        if let Some((label, rest)) = name.split_once('.')
            && self.is_preview_base(rest)
            && let Some(site) = self.preview_site(label)
        {
            return Ok((site, Some(authority)));
        }
        if let Some(public) = &self.public {
            let allowed = name == public.authority.host
                || authority.ip().is_some()
                || is_localhost_name(name);
            if !allowed {
                return Err(HostRefusal::Misdirected {
                    host: authority.host.clone(),
                    expected: public.authority.host.clone(),
                });
            }
        }
        Ok((Site::Daemon, Some(authority)))
    }

    /// The preview a host's first label names (`p8000-<id>`, `files-<id>`), if any.
    fn preview_site(&self, label: &str) -> Option<Site> {
        let (kind, id) = label.rsplit_once('-')?;
        let site = if kind == FILES_LABEL {
            Site::Files
        } else {
            Site::App(
                kind.strip_prefix('p')
                    .and_then(parse_port)
                    .filter(|p| *p != 0)?,
            )
        };
        Some(if id == self.id { site } else { Site::Stale })
    }

    fn is_preview_base(&self, name: &str) -> bool {
        name == LOCAL_BASE
            || self
                .public
                .as_ref()
                .is_some_and(|p| name == p.authority.host && p.authority.ip().is_none())
    }

    /// Where preview links point, for a caller that reached the daemon as `host`.
    pub fn preview_base(&self, host: Option<&Authority>) -> Result<PreviewBase, NoPreviewOrigin> {
        let id = self.id.clone();
        if let Some(public) = &self.public {
            if public.authority.ip().is_some() {
                return Err(NoPreviewOrigin::no_subdomains(&public.authority.host));
            }
            if !public.prefix.is_empty() {
                return Err(NoPreviewOrigin(format!(
                    "previews are served at the root of their own host names, and --public-url has a path ({}); give coved a host name of its own (and *.NAME) for previews",
                    public.prefix
                )));
            }
            return Ok(PreviewBase {
                https: public.https,
                host: public.authority.host.clone(),
                port: public.authority.port,
                id,
            });
        }
        match host {
            Some(host) if host.is_loopback() => Ok(PreviewBase {
                https: false,
                host: LOCAL_BASE.to_string(),
                port: host.port,
                id,
            }),
            Some(host) => Err(NoPreviewOrigin::no_subdomains(&host.host)),
            None => Err(NoPreviewOrigin::no_subdomains("(no Host header)")),
        }
    }

    /// The daemon's own base URL for a caller that reached it as `host`: the public URL, or
    /// `http://<host>`.
    pub fn daemon_base(&self, host: Option<&Authority>) -> String {
        match (&self.public, host) {
            (Some(public), _) => public.base(),
            (None, Some(host)) => format!("http://{}", host.to_url_authority()),
            (None, None) => "http://localhost".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(raw: &str) -> Origins {
        Origins::new(Some(PublicUrl::parse(raw).unwrap()), "k3x9".into())
    }

    #[test]
    fn public_urls_parse_or_say_why_not() {
        let p = PublicUrl::parse("https://Sandbox-7.example.com:8443/box/").unwrap();
        assert!(p.https);
        assert_eq!(p.authority.host, "sandbox-7.example.com");
        assert_eq!(p.base(), "https://sandbox-7.example.com:8443/box");
        for bad in [
            "sandbox.example.com",
            "ftp://x",
            "http://a@b",
            "http://x/?q",
            "http://",
        ] {
            assert!(PublicUrl::parse(bad).is_err(), "{bad}");
        }
        // A path in front of the daemon leaves previews no host names of their own.
        assert!(
            public("https://proxy.example.com/sandbox-7")
                .preview_base(None)
                .is_err()
        );
    }

    #[test]
    fn locally_each_app_and_the_files_have_their_own_origin() {
        let o = Origins::new(None, "k3x9".into());
        let site = |h| o.site(Some(h)).map(|(s, _)| s);
        assert_eq!(site("127.0.0.1:7700"), Ok(Site::Daemon));
        assert_eq!(site("localhost:7700"), Ok(Site::Daemon));
        assert_eq!(site("p8000-k3x9.localhost:7700"), Ok(Site::App(8000)));
        assert_eq!(site("P8000-K3X9.LOCALHOST:7700"), Ok(Site::App(8000)));
        assert_eq!(site("files-k3x9.localhost:7700"), Ok(Site::Files));
        // Another run's (or another sandbox's) preview hosts are nobody's here.
        assert_eq!(site("p8000-aaaa.localhost:7700"), Ok(Site::Stale));
        assert_eq!(site("files-aaaa.localhost:7700"), Ok(Site::Stale));
        // Not canonical ports, not ports at all: the daemon's own origin.
        for h in [
            "p08000-k3x9.localhost",
            "p0-k3x9.localhost",
            "p70000-k3x9.localhost",
            "px-k3x9.localhost",
            "p8000.localhost",
        ] {
            assert_eq!(site(h), Ok(Site::Daemon), "{h}");
        }
        assert_eq!(site("p+80-k3x9.localhost"), Err(HostRefusal::Malformed));
        // Without a public URL any well-formed host reaches the (token-guarded) daemon,
        // but only loopback names get preview links.
        assert_eq!(site("sandbox.internal:7700"), Ok(Site::Daemon));
        assert_eq!(site("p8000-k3x9.sandbox.internal"), Ok(Site::Daemon));
        assert_eq!(site("evil.example/x?"), Err(HostRefusal::Malformed));
        let local = Authority::parse("127.0.0.1:7700").unwrap();
        let base = o.preview_base(Some(&local)).unwrap();
        assert_eq!(base.app(8000), "http://p8000-k3x9.localhost:7700");
        assert_eq!(base.files(), "http://files-k3x9.localhost:7700");
        let remote = Authority::parse("10.0.0.5:7700").unwrap();
        assert!(o.preview_base(Some(&remote)).is_err());
        assert_eq!(o.daemon_base(Some(&local)), "http://127.0.0.1:7700");
    }

    #[test]
    fn behind_a_public_url_other_hosts_are_misdirected() {
        let o = public("https://sb.example.com");
        let site = |h| o.site(Some(h)).map(|(s, _)| s);
        assert_eq!(site("sb.example.com"), Ok(Site::Daemon));
        assert_eq!(site("p3000-k3x9.sb.example.com"), Ok(Site::App(3000)));
        assert_eq!(site("files-k3x9.sb.example.com"), Ok(Site::Files));
        assert_eq!(site("p3000-k3x9.localhost:7700"), Ok(Site::App(3000)));
        assert_eq!(site("10.1.2.3:7700"), Ok(Site::Daemon));
        assert_eq!(site("[::1]:7700"), Ok(Site::Daemon));
        for h in [
            "rebind.attacker.example",
            "sb.example.com.evil.example",
            "x.sb.example.com",
        ] {
            assert!(
                matches!(site(h), Err(HostRefusal::Misdirected { .. })),
                "{h}"
            );
        }
        let base = o.preview_base(None).unwrap();
        assert_eq!(base.app(3000), "https://p3000-k3x9.sb.example.com");
        assert_eq!(o.daemon_base(None), "https://sb.example.com");
    }
}
