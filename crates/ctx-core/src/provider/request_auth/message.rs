//! Step 1 of the profile: the request's framing and its authentication
//! headers, checked on a transport-neutral view of what was received (the
//! server hands over the raw header list, duplicates included).

use super::{Rejection, Stage, CONTEXT_PATH, HEALTH_PATH, MAX_BODY_BYTES};

/// One received request, as the bytes came: method, request target, every
/// header line (names in any case, duplicates kept, in order) and the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

/// The profile's two routes; anything else is refused like bad framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/delegated-context`
    Context,
    /// `GET /health`
    Health,
}

impl Route {
    /// Exact method and exact target; no normalisation.
    pub fn of(method: &str, target: &str) -> Option<Route> {
        match (method, target) {
            ("POST", CONTEXT_PATH) => Some(Route::Context),
            ("GET", HEALTH_PATH) => Some(Route::Health),
            _ => None,
        }
    }
}

/// The eight `X-AtMem-*` headers, in the order of the profile's table.
pub const AUTH_HEADERS: [&str; 8] = [
    "x-atmem-profile",
    "x-atmem-provider",
    "x-atmem-instance",
    "x-atmem-key-id",
    "x-atmem-issued",
    "x-atmem-expires",
    "x-atmem-nonce",
    "x-atmem-signature",
];

/// The authentication fields of a well-framed request, syntax checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFields<'a> {
    pub route: Route,
    pub host: &'a str,
    pub profile: &'a str,
    pub provider_id: &'a str,
    pub instance_id: &'a str,
    pub key_id: &'a str,
    pub issued_text: &'a str,
    pub expires_text: &'a str,
    pub issued: i64,
    pub expires: i64,
    pub nonce: &'a str,
    pub signature: &'a str,
}

fn framing(detail: impl Into<String>) -> Rejection {
    Rejection::new(Stage::Framing, detail)
}

fn headers(detail: impl Into<String>) -> Rejection {
    Rejection::new(Stage::Headers, detail)
}

impl HttpRequest {
    /// Every value of header `name` (ASCII case-insensitive), in order.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The one value of `name` as text: `Ok(None)` when absent; a duplicate, or
    /// a value that is not printable ASCII, is refused at `stage`.
    fn one<'a>(&'a self, name: &'a str, stage: Stage) -> Result<Option<&'a str>, Rejection> {
        let mut it = self.values(name);
        let Some(first) = it.next() else {
            return Ok(None);
        };
        if it.next().is_some() {
            return Err(Rejection::new(
                stage,
                format!("{name} appears more than once"),
            ));
        }
        let text = std::str::from_utf8(first)
            .ok()
            .filter(|t| t.bytes().all(|b| (0x20..=0x7e).contains(&b)))
            .ok_or_else(|| Rejection::new(stage, format!("{name} is not printable ASCII")))?;
        Ok(Some(text))
    }

    /// Step 1: route, framing and size, then each authentication header
    /// exactly once and well formed.
    pub fn auth_fields(&self) -> Result<AuthFields<'_>, Rejection> {
        let route = Route::of(&self.method, &self.target).ok_or_else(|| {
            framing(format!(
                "{} {} is not a route of this profile (POST {CONTEXT_PATH}, GET {HEALTH_PATH})",
                self.method, self.target
            ))
        })?;
        if self.values("transfer-encoding").next().is_some() {
            return Err(framing("Transfer-Encoding is not supported"));
        }
        let host = self
            .one("host", Stage::Framing)?
            .ok_or_else(|| framing("no Host header"))?;
        self.check_body(route)?;

        if AUTH_HEADERS.iter().all(|h| self.values(h).next().is_none()) {
            return Err(headers("no authentication headers (an unsigned request)"));
        }
        let mut v = [""; 8];
        for (slot, name) in v.iter_mut().zip(AUTH_HEADERS) {
            *slot = self
                .one(name, Stage::Headers)?
                .ok_or_else(|| headers(format!("{name} is missing")))?;
        }
        let [profile, provider_id, instance_id, key_id, issued_text, expires_text, nonce, signature] =
            v;
        for (name, id) in [
            ("x-atmem-provider", provider_id),
            ("x-atmem-instance", instance_id),
            ("x-atmem-key-id", key_id),
        ] {
            if !is_id(id) {
                return Err(headers(format!(
                    "{name}: expected 1-256 of [A-Za-z0-9_.:-], found {} character(s)",
                    id.len()
                )));
            }
        }
        let issued = unix_seconds("x-atmem-issued", issued_text)?;
        let expires = unix_seconds("x-atmem-expires", expires_text)?;
        for (name, h) in [("x-atmem-nonce", nonce), ("x-atmem-signature", signature)] {
            if !is_hex64(h) {
                return Err(headers(format!(
                    "{name}: expected 64 lowercase hex characters"
                )));
            }
        }
        Ok(AuthFields {
            route,
            host,
            profile,
            provider_id,
            instance_id,
            key_id,
            issued_text,
            expires_text,
            issued,
            expires,
            nonce,
            signature,
        })
    }

    /// POST: one Content-Length equal to the body's size (at most 150,000
    /// bytes) and one `application/json` Content-Type. Health: an empty body.
    fn check_body(&self, route: Route) -> Result<(), Rejection> {
        let length = self.one("content-length", Stage::Framing)?;
        if let Some(l) = length {
            let ok = !l.is_empty() && l.len() <= 7 && l.bytes().all(|b| b.is_ascii_digit());
            if !ok || l.parse::<usize>().ok() != Some(self.body.len()) {
                return Err(framing(format!(
                    "Content-Length {l:?} does not state the {}-byte body",
                    self.body.len()
                )));
            }
        }
        match route {
            Route::Health if !self.body.is_empty() => Err(framing("health has an empty body")),
            Route::Health => Ok(()),
            Route::Context => {
                if length.is_none() {
                    return Err(framing("no Content-Length"));
                }
                if self.body.len() > MAX_BODY_BYTES {
                    return Err(framing(format!(
                        "body of {} bytes is over the {MAX_BODY_BYTES}-byte limit",
                        self.body.len()
                    )));
                }
                let ctype = self
                    .one("content-type", Stage::Framing)?
                    .ok_or_else(|| framing("no Content-Type"))?;
                let media = ctype.split(';').next().unwrap_or("").trim();
                if !media.eq_ignore_ascii_case("application/json") {
                    return Err(framing(format!(
                        "Content-Type {ctype:?} is not application/json"
                    )));
                }
                Ok(())
            }
        }
    }
}

/// `[A-Za-z0-9_.:-]{1,256}`.
pub(super) fn is_id(s: &str) -> bool {
    (1..=256).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// 1-12 decimal digits, no leading zero.
fn unix_seconds(name: &str, s: &str) -> Result<i64, Rejection> {
    let ok =
        (1..=12).contains(&s.len()) && !s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit());
    if !ok {
        return Err(headers(format!(
            "{name}: expected Unix seconds (1-12 digits, no leading zero), found {s:?}"
        )));
    }
    Ok(s.parse().expect("at most 12 digits"))
}
