//! Dynamic shell completion (`COMPLETE=bash ctx`): role, agent and object ids come
//! from the repository the shell is in.

use crate::support::ctx_in;
use crate::support::fixtures::healthy;

fn complete(repo: &crate::support::Repo, index: &str, words: &[&str]) -> Vec<String> {
    let r = ctx_in(repo)
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", index)
        .env("_CLAP_COMPLETE_COMP_TYPE", "9")
        .env("_CLAP_COMPLETE_SPACE", "true")
        .arg("--")
        .args(words)
        .run();
    r.assert_ok();
    r.stdout
        .split(['\n', '\u{b}'])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn roles_agents_and_object_ids_complete_from_the_repository() {
    let repo = healthy();
    assert_eq!(
        complete(&repo, "3", &["ctx", "list", "--role", ""]),
        ["leads", "support"]
    );
    assert_eq!(
        complete(&repo, "3", &["ctx", "list", "--agent", ""]),
        ["support-agent"]
    );
    assert_eq!(
        complete(&repo, "2", &["ctx", "get", "pri"]),
        ["pricing.enterprise"]
    );
}
