//! Continuous-integration files ctx writes for a repository (`ctx init --ci github`).
//! They run a *released* ctx binary through the GitHub Action at the root of the
//! ctx repository (`action.yml`), so a context repository needs no Rust toolchain.

/// The GitHub repository that publishes ctx releases and the `action.yml` that installs them.
/// The generated workflow pins the action to the release that wrote it.
pub const ACTION_REPOSITORY: &str = "ctx-dev/ctx";

/// Where `ctx init --ci github` writes its workflow, relative to the git work tree.
pub const GITHUB_WORKFLOW_PATH: &str = ".github/workflows/context.yml";

/// The commands the generated workflow runs, in order: health with annotations on
/// the pull request, then canonical form.
pub const GITHUB_WORKFLOW_COMMANDS: [&str; 2] = ["doctor --strict --format github", "fmt --check"];

/// A GitHub Actions workflow that checks the repository on every push and pull
/// request. `version` is the ctx release to pin (without `v`); `working_directory`
/// is the folder holding `opencontext.yaml`, relative to the git work tree (`.`
/// when they are the same).
pub fn github_workflow(version: &str, working_directory: &str) -> String {
    let dir = if working_directory.is_empty() {
        "."
    } else {
        working_directory
    };
    let mut steps = String::new();
    for command in GITHUB_WORKFLOW_COMMANDS {
        steps.push_str(&format!(
            "      - uses: {ACTION_REPOSITORY}@v{version}\n        with:\n          command: {command}\n          working-directory: {dir}\n"
        ));
    }
    format!(
        "# Written by `ctx init --ci github`. Checks this OpenContext repository on every push\n\
         # and pull request with a released, checksum-verified ctx binary (no Rust toolchain):\n\
         # `ctx doctor` findings appear as annotations on the pull request, and `ctx fmt --check`\n\
         # fails when an object file is not in canonical form (run `ctx fmt` to fix it).\n\
         name: context\n\
         \n\
         on:\n  push:\n  pull_request:\n\
         \n\
         permissions:\n  contents: read\n\
         \n\
         jobs:\n  ctx:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n{steps}"
    )
}

/// The workflow file for a repository whose manifest folder is `repo_dir`: placed
/// in the enclosing git work tree (the nearest folder with `.git`), or in
/// `repo_dir` itself when it is not in one yet. Returns (absolute path, text).
pub fn github_workflow_file(
    repo_dir: &std::path::Path,
    version: &str,
) -> (std::path::PathBuf, String) {
    let root = repo_dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(repo_dir);
    let rel = repo_dir
        .strip_prefix(root)
        .map(|r| r.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default();
    (
        root.join(GITHUB_WORKFLOW_PATH),
        github_workflow(version, if rel.is_empty() { "." } else { &rel }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_is_yaml_and_pins_the_release() {
        let text = github_workflow("1.2.3", "support");
        let doc = crate::yaml::parse(&text).unwrap();
        let steps = doc["jobs"]["ctx"]["steps"].as_array().unwrap();
        assert_eq!(steps[0]["uses"], "actions/checkout@v4");
        assert_eq!(steps[1]["uses"], "ctx-dev/ctx@v1.2.3");
        assert_eq!(
            steps[1]["with"]["command"],
            "doctor --strict --format github"
        );
        assert_eq!(steps[2]["with"]["command"], "fmt --check");
        assert_eq!(steps[2]["with"]["working-directory"], "support");
        assert_eq!(doc["permissions"]["contents"], "read");
        assert!(doc["on"].get("pull_request").is_some());
    }

    #[test]
    fn workflow_goes_to_the_git_work_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("team/context");
        std::fs::create_dir_all(&repo).unwrap();
        let (path, _) = github_workflow_file(&repo, "1.0.0");
        assert_eq!(path, repo.join(".github/workflows/context.yml"));
        std::fs::create_dir_all(tmp.path().join("team/.git")).unwrap();
        let (path, text) = github_workflow_file(&repo, "1.0.0");
        assert_eq!(path, tmp.path().join("team/.github/workflows/context.yml"));
        assert!(text.contains("working-directory: context\n"), "{text}");
    }
}
