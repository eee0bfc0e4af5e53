//! A local port no one listens on, held for the test: a socket bound to it and never
//! listening, so a connection is refused and no other process can take the port meanwhile
//! (as one could once a probing listener is dropped, with many tests running at once).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::OwnedFd;

use anyhow::{Context, Result, anyhow};
use rustix::net::{AddressFamily, SocketType, bind, getsockname, socket};

/// A port on 127.0.0.1 that refuses connections while this lives.
#[derive(Debug)]
pub struct ClosedPort {
    _socket: OwnedFd,
    addr: SocketAddr,
}

impl ClosedPort {
    /// Binds a fresh port without listening on it.
    pub fn new() -> Result<ClosedPort> {
        let fd = socket(AddressFamily::INET, SocketType::STREAM, None).context("socket")?;
        bind(&fd, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).context("bind")?;
        let addr = getsockname(&fd).context("getsockname")?;
        let addr = SocketAddr::try_from(addr).map_err(|_| anyhow!("not an IP address"))?;
        Ok(ClosedPort { _socket: fd, addr })
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}
