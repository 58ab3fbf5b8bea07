//! The delegated-provider contract's acceptance state through `ctx provider
//! verify` (seed 001 §5): replay protection by default, the explicit
//! `--no-state`, the full-precision clock, published fixture keys, and a
//! `--context-out` that cannot be written.

use std::path::Path;

use chrono::{DateTime, SubsecRound, TimeDelta, Timelike, Utc};
use serde_json::{json, Value};

use ctx_core::provider::{
    sign_envelope, Binding, Content, EnvelopeInput, ProviderRef, ReceiptRef, Registration,
    TrustStore,
};
use ctx_core::signing::SigningKeyPair;

use crate::support::{ctx_env, project_root, write, Repo, MANIFEST, MISSION};

fn provider() -> ProviderRef {
    ProviderRef {
        id: "acme-provider".into(),
        version: "1.0.0".into(),
        instance_id: "acme-1".into(),
    }
}

fn binding() -> Binding {
    Binding {
        run_id: "run-1".into(),
        turn_id: "turn-1".into(),
        session_id: "session-1".into(),
        agent_id: "agent-1".into(),
        user_id: "user-opaque-1".into(),
        workspace_id: "ws-1".into(),
    }
}

/// A host folder: trust file, binding, and two different signed results for the
/// same turn (`a.json`, `b.json`), valid now.
fn host(dir: &Path) {
    let key = SigningKeyPair::generate().unwrap();
    let trust = TrustStore::new(vec![Registration::new(provider(), "k1", key.public_key())])
        .unwrap()
        .to_json();
    write(dir, "host/trust.json", trust.to_string().as_bytes());
    write(
        dir,
        "host/binding.json",
        serde_json::to_string(&binding()).unwrap().as_bytes(),
    );
    for (name, text) in [("a", "Context A\n"), ("b", "Context B\n")] {
        let receipt = ReceiptRef {
            id: "urn:ctx:receipt:1".into(),
            contract_id: "ctx.receipt.v1".into(),
            sha256: "a".repeat(64),
        };
        let input =
            EnvelopeInput::new(provider(), binding(), Content::Inject(text.into()), receipt);
        let env = sign_envelope(&input, &key, "k1").unwrap();
        write(
            dir,
            &format!("host/{name}.json"),
            env.to_string().as_bytes(),
        );
    }
}

/// `provider verify host/<name>.json` in `dir`, with a private state home.
fn verify(dir: &Path, state_home: &Path, name: &str, extra: &[&str]) -> crate::support::Run {
    let env = format!("host/{name}.json");
    let mut args = vec![
        "provider",
        "verify",
        env.as_str(),
        "--trust",
        "host/trust.json",
        "--binding",
        "host/binding.json",
    ];
    if !extra.contains(&"--format") {
        args.extend_from_slice(&["--format", "json"]);
    }
    args.extend_from_slice(extra);
    let home = state_home.join("home");
    ctx_env(
        dir,
        &args,
        &[
            ("XDG_STATE_HOME", state_home.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
        ],
    )
}

#[test]
fn replay_protection_is_on_by_default_in_a_repository() {
    let repo = Repo::new(&[
        ("opencontext.yaml", MANIFEST),
        ("context/mission.md", MISSION),
    ]);
    let home = tempfile::tempdir().unwrap();
    host(repo.path());
    let first = verify(repo.path(), home.path(), "a", &[]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let doc = first.json();
    assert_eq!(doc["evidence"]["acceptance"], "accepted");
    let state = repo.path().join(".ctx/provider-state");
    assert_eq!(doc["state"], json!(state.display().to_string()));
    assert!(state.join("acceptances.json").is_file());
    // An exact retry is idempotent; another result for the same turn is refused.
    let retry = verify(repo.path(), home.path(), "a", &[]);
    assert_eq!(retry.json()["evidence"]["acceptance"], "idempotent_retry");
    let second = verify(repo.path(), home.path(), "b", &[]);
    assert_eq!(second.code, 1, "{}", second.stdout);
    assert_eq!(second.json()["failure"]["code"], "turn");
    // From a subfolder the repository's state is the one used.
    std::fs::create_dir_all(repo.path().join("context/deep")).unwrap();
    let r = ctx_env(
        &repo.path().join("context/deep"),
        &[
            "provider",
            "verify",
            "../../host/b.json",
            "--trust",
            "../../host/trust.json",
            "--binding",
            "../../host/binding.json",
            "--format",
            "json",
        ],
        &[("XDG_STATE_HOME", home.path().to_str().unwrap())],
    );
    assert_eq!(r.json()["failure"]["code"], "turn", "{}", r.stdout);
    assert!(
        !home.path().join("ctx").exists(),
        "nothing went to the user folder"
    );
}

#[test]
fn outside_a_repository_the_state_is_per_user() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    host(dir.path());
    let first = verify(dir.path(), home.path(), "a", &["--format", "human"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let state = home.path().join("ctx/provider-state");
    assert!(
        first
            .stdout
            .contains(&format!("acceptance: accepted (state {})", state.display())),
        "{}",
        first.stdout
    );
    assert!(state.join("acceptances.json").is_file());
    let second = verify(dir.path(), home.path(), "b", &[]);
    assert_eq!(second.json()["failure"]["code"], "turn");
    // Without XDG_STATE_HOME (a relative value is ignored) it is under HOME.
    let other = tempfile::tempdir().unwrap();
    host(other.path());
    let h = home.path().join("h2");
    let r = ctx_env(
        other.path(),
        &[
            "provider",
            "verify",
            "host/a.json",
            "--trust",
            "host/trust.json",
            "--binding",
            "host/binding.json",
        ],
        &[
            ("XDG_STATE_HOME", "relative/state"),
            ("HOME", h.to_str().unwrap()),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(h
        .join(".local/state/ctx/provider-state/acceptances.json")
        .is_file());
}

#[test]
fn no_state_is_an_explicit_opt_out_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    host(dir.path());
    for name in ["a", "b"] {
        let r = verify(dir.path(), home.path(), name, &["--no-state"]);
        assert_eq!(r.code, 0, "{}", r.stdout);
        let doc = r.json();
        assert_eq!(doc["evidence"]["acceptance"], "not_recorded");
        assert_eq!(doc["state"], Value::Null);
    }
    let human = verify(
        dir.path(),
        home.path(),
        "a",
        &["--no-state", "--format", "human"],
    );
    assert!(
        human.stdout.contains("--no-state: nothing was recorded, so this turn has no one-result, nonce or replay protection"),
        "{}",
        human.stdout
    );
    assert!(!home.path().join("ctx").exists());
    let both = verify(
        dir.path(),
        home.path(),
        "a",
        &["--no-state", "--state", "s"],
    );
    assert_eq!(both.code, 2, "--state and --no-state conflict");
}

#[test]
fn an_existing_context_out_is_refused_before_the_turn_is_reserved() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    host(dir.path());
    write(dir.path(), "host/context.md", b"the host's own file\n");
    let r = verify(
        dir.path(),
        home.path(),
        "a",
        &["--state", "st", "--context-out", "host/context.md"],
    );
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("host/context.md")).unwrap(),
        "the host's own file\n"
    );
    // Nothing was reserved: the next attempt is the first acceptance, not a retry.
    let r = verify(
        dir.path(),
        home.path(),
        "a",
        &["--state", "st", "--context-out", "host/new.md"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["evidence"]["acceptance"], "accepted");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("host/new.md")).unwrap(),
        "Context A\n"
    );
    // A rejected result leaves no placeholder behind.
    let r = verify(
        dir.path(),
        home.path(),
        "b",
        &["--state", "st", "--context-out", "host/b.md"],
    );
    assert_eq!(r.json()["failure"]["code"], "turn");
    assert!(!dir.path().join("host/b.md").exists());
}

#[test]
fn the_default_clock_keeps_sub_second_precision() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    host(dir.path());
    // Early in a second, an `expires_at` 1 ms into it has just passed; a clock
    // truncated to whole seconds would still see the envelope as valid.
    let now = loop {
        let now = Utc::now();
        if (5..300).contains(&(now.nanosecond() / 1_000_000)) {
            break now;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let expires: DateTime<Utc> = now.trunc_subsecs(0) + TimeDelta::milliseconds(1);
    let created = expires - TimeDelta::seconds(60);
    let path = dir.path().join("host/a.json");
    let mut env: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    env["created_at"] = json!(created.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    env["expires_at"] = json!(expires.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    std::fs::write(&path, env.to_string()).unwrap();
    let r = verify(dir.path(), home.path(), "a", &["--no-state"]);
    assert_eq!(r.json()["failure"]["code"], "not_expired", "{}", r.stdout);
}

#[test]
fn the_published_fixture_key_is_refused_without_its_marker() {
    let fixtures = project_root().join("fixtures/provider-vectors");
    let dir = tempfile::tempdir().unwrap();
    let mut trust: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("trust.json")).unwrap())
            .unwrap();
    trust.as_object_mut().unwrap().remove("fixture_key_only");
    write(dir.path(), "trust.json", trust.to_string().as_bytes());
    let env: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("inject.valid.json")).unwrap())
            .unwrap();
    write(
        dir.path(),
        "binding.json",
        env["binding"].to_string().as_bytes(),
    );
    let envelope = fixtures.join("inject.valid.json");
    let args = [
        "provider",
        "verify",
        envelope.to_str().unwrap(),
        "--trust",
        "trust.json",
        "--binding",
        "binding.json",
        "--no-state",
    ];
    let r = ctx_env(dir.path(), &args, &[]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("private seed is public"), "{}", r.stderr);
    let mut allowed = args.to_vec();
    allowed.push("--allow-fixture-keys");
    let r = ctx_env(dir.path(), &allowed, &[]);
    assert!(!r.stderr.contains("private seed"), "{}", r.stderr);
    assert!(
        r.stdout.starts_with("accepted") || r.stdout.starts_with("rejected"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}
