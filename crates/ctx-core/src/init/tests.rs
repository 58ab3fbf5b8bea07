use super::*;

#[test]
fn slugs_and_namespaces() {
    assert_eq!(slug("Support Context!"), "support-context");
    assert_eq!(slug("--"), "context");
    assert!(valid_namespace("acme-2"));
    assert!(!valid_namespace("-acme"));
    assert!(!valid_namespace("Acme"));
    assert!(!valid_namespace(""));
}

fn options<'a>(dir: &'a Path) -> Options<'a> {
    Options {
        dir,
        id: "acme",
        name_yaml: "\"Acme\"",
        today: "2026-08-09",
        template: true,
        force: false,
        github_ci: None,
        git: false,
    }
}

#[test]
fn writes_the_template_and_keeps_existing_files_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    let steps = apply(&options(&dir)).unwrap();
    assert_eq!(steps.len(), 5);
    assert!(steps.iter().all(|s| matches!(
        s,
        Step::Template {
            outcome: Outcome::Created,
            ..
        }
    )));
    assert_eq!(existing_manifest(&dir), Some("opencontext.yaml"));
    let manifest = std::fs::read_to_string(dir.join("opencontext.yaml")).unwrap();
    assert!(
        manifest.contains("id: acme\nname: \"Acme\"\n"),
        "{manifest}"
    );
    std::fs::write(dir.join("context/mission.md"), "mine").unwrap();
    let again = apply(&options(&dir)).unwrap();
    assert!(again.iter().all(|s| matches!(
        s,
        Step::Template {
            outcome: Outcome::Kept,
            ..
        }
    )));
    assert_eq!(
        std::fs::read_to_string(dir.join("context/mission.md")).unwrap(),
        "mine"
    );
    let forced = apply(&Options {
        force: true,
        ..options(&dir)
    })
    .unwrap();
    assert!(forced.iter().all(|s| matches!(
        s,
        Step::Template {
            outcome: Outcome::Replaced,
            ..
        }
    )));
}

#[test]
fn the_workflow_is_a_step_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let o = Options {
        template: false,
        github_ci: Some("1.2.3"),
        ..options(tmp.path())
    };
    let steps = apply(&o).unwrap();
    let [Step::Workflow {
        path,
        outcome: Outcome::Created,
    }] = steps.as_slice()
    else {
        panic!("{steps:?}");
    };
    assert!(std::fs::read_to_string(path).unwrap().contains("1.2.3"));
}

#[test]
fn gitignore_lines_are_appended_once() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(".gitignore"), "target").unwrap();
    let o = Options {
        template: false,
        git: true,
        ..options(tmp.path())
    };
    let Ok(steps) = apply(&o) else {
        return; // no git on this machine
    };
    assert!(steps.iter().any(|s| matches!(
        s,
        Step::GitIgnore {
            outcome: Outcome::Updated,
            ..
        }
    )));
    let text = std::fs::read_to_string(tmp.path().join(".gitignore")).unwrap();
    assert_eq!(text, format!("target\n{}\n", GITIGNORE.join("\n")));
    let steps = apply(&o).unwrap();
    assert!(
        !steps.iter().any(|s| matches!(s, Step::GitIgnore { .. })),
        "{steps:?}"
    );
}
