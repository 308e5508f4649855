//! A debuginfod client: debug files (and executables) by build-id from the servers of
//! `$DEBUGINFOD_URLS`, for DSOs that have no symbols on this machine, cached in elfutils'
//! client layout (`$DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
//! `~/.cache/debuginfod_client`; files `BUILDID/debuginfo` and `BUILDID/executable`), so that
//! perf, gdb and culprit share it and a second report needs no server.
//!
//! Each request has a time limit ([`Debuginfod::timeout`]); a server that failed once is not
//! asked again by the same symbolizer, so a down or slow server costs one timeout and one
//! warning, never a hang.
//!
//! `https://` servers (Debian's, Fedora's, Ubuntu's) are verified against the certificates of
//! `$SSL_CERT_FILE` when it is set, else the system's bundle (Debian's
//! `/etc/ssl/certs/ca-certificates.crt`, Fedora's `/etc/pki/tls/certs/ca-bundle.crt`), as
//! elfutils' client does through libcurl; where neither exists, Mozilla's roots built into
//! culprit (rustls, through ureq).

use std::io::Read;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use ureq::tls::{PemItem, RootCerts, TlsConfig};

/// Where and how to ask debuginfod servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debuginfod {
    /// Server URLs, in order (`$DEBUGINFOD_URLS`, space separated).
    pub urls: Vec<String>,
    /// The cache directory (elfutils' layout).
    pub cache: PathBuf,
    /// Time limit of one request (connect and transfer).
    pub timeout: Duration,
}

/// The largest file fetched (a debug file of a large library is a few hundred MB).
const MAX_FILE: u64 = 1 << 30;

impl Debuginfod {
    /// The client `$DEBUGINFOD_URLS` asks for, `None` when it is unset or empty. The
    /// timeout is `$DEBUGINFOD_TIMEOUT` seconds (elfutils' variable), else 10.
    pub fn from_env() -> Option<Debuginfod> {
        let urls: Vec<String> = std::env::var("DEBUGINFOD_URLS")
            .ok()?
            .split_whitespace()
            .map(|u| u.trim_end_matches('/').to_string())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let cache = std::env::var_os("DEBUGINFOD_CACHE_PATH")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME")
                    .map(|x| PathBuf::from(x).join("debuginfod_client"))
            })
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/debuginfod_client"))
            })?;
        let secs = std::env::var("DEBUGINFOD_TIMEOUT")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(10);
        Some(Debuginfod {
            urls,
            cache,
            timeout: Duration::from_secs(secs),
        })
    }

    /// The cached file of this build-id and kind (`debuginfo`, `executable`), if any.
    pub fn cached(&self, build_id: &str, kind: &str) -> Option<PathBuf> {
        let p = self.cache.join(build_id).join(kind);
        p.is_file().then_some(p)
    }

    /// The file of this build-id and kind, from the cache or else the first server that
    /// has it (servers in `skip` are not asked; a server that fails is added to it). Err
    /// says why each server asked failed; a 404 is no failure of the server.
    pub fn fetch(
        &self,
        build_id: &str,
        kind: &str,
        skip: &mut Vec<String>,
    ) -> Result<PathBuf, String> {
        if let Some(p) = self.cached(build_id, kind) {
            return Ok(p);
        }
        let mut why = Vec::new();
        for url in &self.urls {
            if skip.contains(url) {
                continue;
            }
            match self.get(url, build_id, kind) {
                Ok(Some(p)) => return Ok(p),
                Ok(None) => why.push(format!("{url}: not found")),
                Err(e) => {
                    why.push(format!("{url}: {e}"));
                    skip.push(url.clone());
                }
            }
        }
        Err(if why.is_empty() {
            "no server left to ask".to_string()
        } else {
            why.join("; ")
        })
    }

    /// One request; Ok(None) when the server does not have the file.
    fn get(&self, url: &str, build_id: &str, kind: &str) -> Result<Option<PathBuf>, String> {
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err("not an http:// or https:// URL".into());
        }
        let tls = TlsConfig::builder()
            .root_certs(root_certs().clone())
            .build();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .http_status_as_error(false)
            .tls_config(tls)
            .build()
            .into();
        let full = format!("{url}/buildid/{build_id}/{kind}");
        let mut resp = agent.get(&full).call().map_err(|e| e.to_string())?;
        match resp.status().as_u16() {
            200 => {}
            404 => return Ok(None),
            s => return Err(format!("HTTP {s}")),
        }
        let mut body = Vec::new();
        resp.body_mut()
            .as_reader()
            .take(MAX_FILE)
            .read_to_end(&mut body)
            .map_err(|e| e.to_string())?;
        self.store(build_id, kind, &body).map(Some)
    }

    /// Writes a fetched file into the cache (a temporary name, then renamed: another
    /// process may fetch the same file).
    fn store(&self, build_id: &str, kind: &str, body: &[u8]) -> Result<PathBuf, String> {
        let dir = self.cache.join(build_id);
        let fail = |e: std::io::Error| format!("cannot write the cache {}: {e}", dir.display());
        std::fs::create_dir_all(&dir).map_err(fail)?;
        let tmp = dir.join(format!(".{kind}.{}", std::process::id()));
        std::fs::write(&tmp, body).map_err(fail)?;
        let dst = dir.join(kind);
        std::fs::rename(&tmp, &dst).map_err(fail)?;
        Ok(dst)
    }
}

/// The certificates `https://` servers are verified against: `$SSL_CERT_FILE`, else the
/// first system bundle that exists and holds certificates, else Mozilla's built-in roots.
/// Read once per process.
fn root_certs() -> &'static RootCerts {
    static ROOTS: OnceLock<RootCerts> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let files = std::env::var_os("SSL_CERT_FILE")
            .map(PathBuf::from)
            .into_iter()
            .chain(SYSTEM_BUNDLES.iter().map(PathBuf::from));
        for file in files {
            let Ok(pem) = std::fs::read(&file) else {
                continue;
            };
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if !certs.is_empty() {
                return RootCerts::from(certs);
            }
        }
        RootCerts::WebPki
    })
}

/// The CA bundles of the distributions, in the order libcurl's builds look for them.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

impl crate::Symbolizer {
    /// The file of a build-id (`debuginfo` or `executable`) from debuginfod, when the
    /// options have a client; Err says why not (None: no client).
    pub(crate) fn debuginfod_fetch(
        &mut self,
        build_id: &[u8],
        kind: &str,
    ) -> Option<Result<PathBuf, String>> {
        let client = self.opts.debuginfod.clone()?;
        let id = crate::hex(build_id);
        Some(client.fetch(&id, kind, &mut self.debuginfod_down))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_cache_first_and_down_server_skipped_once() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tmp")
            .join(format!("culprit-dbgd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = Debuginfod {
            // Port 9 (discard) on loopback: nothing listens, the connection is refused.
            urls: vec![
                "http://127.0.0.1:9".into(),
                "https://example.invalid".into(),
            ],
            cache: dir.clone(),
            timeout: Duration::from_secs(2),
        };
        let mut skip = Vec::new();
        let err = d.fetch("abcd", "debuginfo", &mut skip).unwrap_err();
        assert!(
            err.contains("127.0.0.1:9") && err.contains("example.invalid"),
            "{err}"
        );
        assert_eq!(skip.len(), 2, "both servers failed: not asked again");
        assert_eq!(
            d.fetch("abcd", "debuginfo", &mut skip).unwrap_err(),
            "no server left to ask"
        );
        let stored = d.store("abcd", "debuginfo", b"x").unwrap();
        assert_eq!(d.fetch("abcd", "debuginfo", &mut skip).unwrap(), stored);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
