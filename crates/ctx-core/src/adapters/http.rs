//! `https://` (and, when the operator allows it, `http://`): a bounded GET.
//! Reached only when the manifest enables the scheme and the run is not --offline
//! (checked in [`super::load`]). One deadline covers every hop and the body; the
//! body is streamed through a size cap; redirects never change the scheme, except
//! an upgrade from http to https. What comes back is untrusted.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;
use ureq::http::Uri;

use crate::manifest::Manifest;
use crate::model::Trust;

use super::{digest, AdapterError, AdapterOptions, Loaded};

/// Redirect hops followed before giving up.
const MAX_REDIRECTS: usize = 5;

/// May plaintext `http://` be fetched (`adapters.http.allow_insecure: true`)?
fn allow_insecure(m: &Manifest) -> bool {
    super::config(m, "http")
        .and_then(|c| c.get("allow_insecure"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The size cap: the run's, lowered (never raised) by `adapters.<scheme>.max_bytes`.
fn max_bytes(m: &Manifest, scheme: &str, opts: &AdapterOptions) -> u64 {
    super::config(m, scheme)
        .and_then(|c| c.get("max_bytes"))
        .and_then(Value::as_u64)
        .map_or(opts.max_bytes, |n| n.min(opts.max_bytes))
}

fn is_loopback(uri: &Uri) -> bool {
    match uri.host() {
        Some(h) => {
            let h = h.trim_start_matches('[').trim_end_matches(']');
            h.eq_ignore_ascii_case("localhost")
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        None => false,
    }
}

/// The absolute URI a `Location` header names, relative to `base`.
fn join(base: &Uri, location: &str) -> Option<String> {
    if location.contains("://") {
        return Some(location.to_string());
    }
    let scheme = base.scheme_str()?;
    let authority = base.authority()?.as_str();
    if let Some(rest) = location.strip_prefix("//") {
        return Some(format!("{scheme}://{rest}"));
    }
    if location.starts_with('/') {
        return Some(format!("{scheme}://{authority}{location}"));
    }
    let path = base.path();
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let dir = if dir.is_empty() { "/" } else { dir };
    Some(format!("{scheme}://{authority}{dir}{location}"))
}

pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    let scheme = super::scheme(uri).unwrap_or_default().to_ascii_lowercase();
    if scheme == "http" && !allow_insecure(m) {
        return Err(AdapterError::unavailable(
            uri,
            "plaintext http is refused; use https, or set `adapters.http.allow_insecure: true` in the manifest",
        ));
    }
    let timeout = super::timeout(m, &scheme, opts);
    let cap = max_bytes(m, &scheme, opts);
    let deadline = Instant::now() + timeout;
    let mut current = uri.to_string();
    for _hop in 0..=MAX_REDIRECTS {
        let parsed: Uri = current.parse().map_err(|e| {
            AdapterError::unavailable(uri, format!("malformed URL `{current}`: {e}"))
        })?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(timed_out(uri, timeout));
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .https_only(scheme == "https")
            .timeout_global(Some(remaining))
            .user_agent(concat!("ctx/", env!("CARGO_PKG_VERSION")))
            // A loopback address means this machine: a proxy cannot reach it.
            .proxy(if is_loopback(&parsed) {
                None
            } else {
                ureq::Proxy::try_from_env()
            })
            .build();
        let agent = ureq::Agent::new_with_config(config);
        let response = agent
            .get(&current)
            .header(
                "Accept",
                "text/markdown, text/plain, application/json, */*;q=0.5",
            )
            .call()
            .map_err(|e| transport(uri, e, timeout))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    AdapterError::unavailable(uri, format!("HTTP {status} without a Location"))
                })?;
            let next = join(&parsed, location).ok_or_else(|| {
                AdapterError::unavailable(uri, format!("cannot follow redirect to `{location}`"))
            })?;
            let next_scheme = super::scheme(&next)
                .unwrap_or_default()
                .to_ascii_lowercase();
            let from = parsed.scheme_str().unwrap_or_default();
            if next_scheme != from && !(from == "http" && next_scheme == "https") {
                return Err(AdapterError::unavailable(
                    uri,
                    format!("refusing a redirect from {from} to another scheme: `{next}`"),
                ));
            }
            current = next;
            continue;
        }
        if !status.is_success() {
            return Err(AdapterError::unavailable(uri, format!("HTTP {status}")));
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .filter(|v| !v.is_empty());
        if let Some(n) = response.body().content_length() {
            if n > cap {
                return Err(too_large(uri, cap));
            }
        }
        let mut bytes = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| read_error(uri, e, timeout))?;
        if bytes.len() as u64 > cap {
            return Err(too_large(uri, cap));
        }
        let d = digest(&bytes);
        let text = String::from_utf8(bytes)
            .map_err(|_| AdapterError::unavailable(uri, "the response is not UTF-8 text"))?;
        return Ok(Loaded {
            content: Value::String(text),
            content_type,
            digest: d,
            trust: super::adapter_trust(m, &scheme, Trust::Untrusted),
        });
    }
    Err(AdapterError::unavailable(
        uri,
        format!("more than {MAX_REDIRECTS} redirects"),
    ))
}

fn timed_out(uri: &str, timeout: Duration) -> AdapterError {
    AdapterError::unavailable(
        uri,
        format!("no complete answer within {} ms", timeout.as_millis()),
    )
}

fn too_large(uri: &str, cap: u64) -> AdapterError {
    AdapterError::unavailable(uri, format!("the response is larger than {cap} bytes"))
}

fn transport(uri: &str, e: ureq::Error, timeout: Duration) -> AdapterError {
    match e {
        ureq::Error::Timeout(_) => timed_out(uri, timeout),
        other => AdapterError::unavailable(uri, other.to_string()),
    }
}

fn read_error(uri: &str, e: std::io::Error, timeout: Duration) -> AdapterError {
    let timed_out_inside = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
    if timed_out_inside || e.kind() == std::io::ErrorKind::TimedOut {
        timed_out(uri, timeout)
    } else {
        AdapterError::unavailable(uri, format!("reading the response: {e}"))
    }
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
