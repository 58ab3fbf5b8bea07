//! What the personal-vault and `ctx serve` tests share: a fresh vault made by
//! `ctx init --template personal`, a running `ctx serve` on an ephemeral loopback
//! port, and a real HTTP client (ureq) to drive it.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{ctx_in, Repo, Spawned};

pub const PASSWORD: &str = "correct horse battery staple";
pub const CONSUMER_SECRET: &str = "a long consumer secret";

/// A vault in `<tmp>/v`, with its home (and so its secret key file).
pub struct Vault {
    pub repo: Repo,
}

impl Vault {
    pub fn create() -> Vault {
        let repo = Repo::new(&[]);
        write_private(&repo.path().join("pw.txt"), &format!("{PASSWORD}\n"));
        ctx_in(&repo)
            .args([
                "init",
                "--template",
                "personal",
                "--password-file",
                "pw.txt",
                "v",
                "--id",
                "me",
                "--name",
                "Me",
            ])
            .run()
            .assert_ok();
        Vault { repo }
    }

    pub fn dir(&self) -> PathBuf {
        self.repo.path().join("v")
    }

    /// The secret key `ctx init` stored in the home's config folder.
    pub fn secret_key(&self) -> String {
        let dir = self.repo.home().config().join("ctx").join("personal");
        for e in std::fs::read_dir(&dir).expect("key folder") {
            let p = e.expect("entry").path();
            if p.extension().and_then(|x| x.to_str()) == Some("key") {
                let text = std::fs::read_to_string(&p).expect("key file");
                for l in text.lines() {
                    if let Some(k) = l.strip_prefix("secret_key: ") {
                        return k.to_string();
                    }
                }
            }
        }
        panic!("no secret key in {}", dir.display());
    }

    pub fn serve(&self, extra: &[&str]) -> Server {
        self.serve_via(&[], extra)
    }

    /// Serve through a wrapper command (e.g. `sh -c 'ulimit -n 256; exec "$0" "$@"'`).
    pub fn serve_via(&self, wrapper: &[&str], extra: &[&str]) -> Server {
        let mut args = vec!["-C", "v", "serve", "--listen", "127.0.0.1:0", "--no-prompt"];
        args.extend_from_slice(extra);
        let cmd = ctx_in(&self.repo).args(&args).via(wrapper);
        let (running, _) = Running::start(cmd.spawn(), 0);
        Server { running }
    }
}

/// A running `ctx serve` (either binding): its URL, an HTTP client that
/// reports every status, and what it writes to stderr after its first lines.
/// Stopped when dropped.
pub struct Running {
    spawned: Option<Spawned>,
    pub url: String,
    pub agent: ureq::Agent,
    log: Arc<Mutex<String>>,
}

impl Running {
    /// Read `listening on <url>` and `more` further stderr lines (returned),
    /// then collect the rest in the background.
    pub fn start(mut spawned: Spawned, more: usize) -> (Running, Vec<String>) {
        let stderr = spawned.child.stderr.take().expect("stderr pipe");
        let mut reader = BufReader::new(stderr);
        let mut line = || {
            let mut l = String::new();
            reader.read_line(&mut l).expect("a stderr line");
            l.trim().to_string()
        };
        let first = line();
        let url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first line of stderr: {first:?}"))
            .to_string();
        let lines = (0..more).map(|_| line()).collect();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            sink.lock().unwrap().push_str(&rest);
        });
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let running = Running {
            spawned: Some(spawned),
            url,
            agent,
            log,
        };
        (running, lines)
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.spawned.as_ref().map(|s| s.child.id())
    }

    /// `127.0.0.1:PORT`, for raw sockets.
    pub fn addr(&self) -> String {
        self.url.trim_start_matches("http://").to_string()
    }

    /// Everything the server wrote to stderr after the lines read at start.
    pub fn stderr(&mut self) -> String {
        self.stop();
        std::thread::sleep(Duration::from_millis(100));
        self.log.lock().unwrap().clone()
    }

    pub fn stop(&mut self) {
        if let Some(mut s) = self.spawned.take() {
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A response: status, JSON body (Null when none), and headers of interest.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub location: Option<String>,
    pub retry_after: Option<String>,
    /// Every header, by lowercase name.
    pub headers: std::collections::BTreeMap<String, String>,
}

impl Resp {
    pub fn expect(&self, status: u16) -> &Resp {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }

    /// An error body with this status and constraint.
    pub fn refused(&self, status: u16, constraint: &str) -> &Resp {
        self.expect(status);
        assert_eq!(self.body["constraint"], constraint, "{}", self.text);
        assert!(self.body["error"].is_string(), "{}", self.text);
        self
    }
}

/// The personal vault's binding.
pub struct Server {
    pub running: Running,
}

impl std::ops::Deref for Server {
    type Target = Running;
    fn deref(&self) -> &Running {
        &self.running
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Running {
        &mut self.running
    }
}

impl Server {
    /// Send a raw request (body as given, with this content type).
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        ctype: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Resp {
        let url = format!("{}{path}", self.url);
        let auth = token.map(|t| format!("Bearer {t}"));
        let result = match method {
            "GET" | "DELETE" => {
                let mut r = if method == "GET" {
                    self.agent.get(&url)
                } else {
                    self.agent.delete(&url)
                };
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            _ => {
                let mut r = if method == "POST" {
                    self.agent.post(&url)
                } else {
                    self.agent.put(&url)
                };
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                if let Some(c) = ctype {
                    r = r.header("Content-Type", c);
                }
                match body {
                    Some(b) => r.send(&b[..]),
                    None => r.send_empty(),
                }
            }
        };
        let mut resp = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let location = header("location");
        let retry_after = header("retry-after");
        let headers = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        Resp {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
            location,
            retry_after,
            headers,
        }
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> Resp {
        self.raw("GET", path, token, None, None)
    }

    pub fn delete(&self, path: &str, token: Option<&str>) -> Resp {
        self.raw("DELETE", path, token, None, None)
    }

    pub fn send(&self, method: &str, path: &str, token: Option<&str>, body: Value) -> Resp {
        self.raw(
            method,
            path,
            token,
            Some("application/json"),
            Some(body.to_string().into_bytes()),
        )
    }

    pub fn unlock(&self, v: &Vault) -> String {
        let r = self.send(
            "POST",
            "/context/unlock",
            None,
            json!({"password": PASSWORD, "secret_key": v.secret_key()}),
        );
        r.expect(200);
        r.body["token"].as_str().expect("session token").to_string()
    }

    pub fn put(&self, token: &str, id: &str, value: Value) -> Resp {
        self.send(
            "PUT",
            &format!("/context/fields/{id}"),
            Some(token),
            json!({ "value": value }),
        )
    }

    /// Register `name` and return a service token with these extra request members.
    pub fn consumer_token(&self, session: &str, name: &str, extra: Value) -> String {
        let r = self.send(
            "POST",
            "/context/consumers/register",
            Some(session),
            json!({"name": name, "secret": CONSUMER_SECRET}),
        );
        assert!(r.status == 201 || r.status == 409, "{}", r.text);
        let mut body = json!({"consumer": name, "secret": CONSUMER_SECRET, "ttl": "30m"});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        let r = self.send("POST", "/context/tokens/service", None, body);
        r.expect(201);
        r.body["token"].as_str().expect("token").to_string()
    }
}

/// Write a file only its owner may read or write (0600), as a password file must be.
pub fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
}

/// Every file under `dir`, as (relative path, bytes).
pub fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((p.strip_prefix(dir).unwrap_or(&p).display().to_string(), b));
            }
        }
    }
    out
}
