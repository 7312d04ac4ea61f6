//! A real HTTP server on loopback for the granted-origin tests: Python's
//! own `http.server` (`origin.py`), on one of the ports the fixture
//! `grants_probe` asks for.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The loopback ports the fixture asks for `http://127.0.0.1:P` (all),
/// `http://localhost:P` (the lower half) and `https://127.0.0.1:P` (the
/// upper half).
pub const ALL: std::ops::RangeInclusive<u16> = 47801..=47808;
pub const NAMED: std::ops::RangeInclusive<u16> = 47801..=47804;
pub const TLS: std::ops::RangeInclusive<u16> = 47805..=47808;

/// A real HTTP server on one of the loopback ports the fixture asks for.
pub struct Origin {
    child: Child,
    pub port: u16,
}

impl Origin {
    /// On the first free port of `ports`, over TLS with `tls` (the
    /// certificate's and the key's files).
    pub fn start(ports: std::ops::RangeInclusive<u16>, tls: Option<(&Path, &Path)>) -> Origin {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/origin.py");
        let mut command = Command::new("python3");
        command.arg(script);
        if let Some((certificate, key)) = tls {
            command.arg("--tls").arg(certificate).arg(key);
        }
        let ports: Vec<String> = ports.map(|port| port.to_string()).collect();
        let mut child = command.args(&ports).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .unwrap_or_else(|| panic!("the origin did not start on any of the ports {ports:?}, the ones the fixture asks for: {line:?}"))
            .parse()
            .unwrap();
        Origin { child, port }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Another port the fixture asks for, which no test's server holds
    /// while this one runs (the next one up, or down at the end).
    pub fn other_port(&self) -> u16 {
        if self.port == 47808 { 47801 } else { self.port + 1 }
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
