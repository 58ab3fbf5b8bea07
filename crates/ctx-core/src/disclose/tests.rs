use super::*;
use crate::testutil::repo_from;

const MANIFEST: &str = "opencontext: \"1.0\"\nid: t\ncollections:\n  notes: ./notes/**\n  policies: ./policies/**\nroles:\n  reader:\n    include: [\"notes.*\", \"policies.*\"]\n    exclude: [\"policies.internal.*\"]\n    max_classification: confidential\n";

fn reader() -> Who {
    Who {
        agent: None,
        roles: vec!["reader".into()],
    }
}

fn at() -> Instant {
    crate::time::parse_at("2026-06-01").expect("a date")
}

/// A repository where one object carries a committed credential, one slips past
/// the role's exclude by declaring another id, and one needs approval.
fn fixture() -> (tempfile::TempDir, Repo) {
    repo_from(&[
        ("opencontext.yaml", MANIFEST),
        ("notes/refunds.md", "---\ntype: note\ntitle: Refunds\n---\nRefunds within 30 days.\n"),
        (
            "notes/creds.md",
            "---\ntype: note\ntitle: Deploy\n---\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        ),
        (
            "policies/internal/leak.md",
            "---\nid: policies.leaked-escalation\ntype: policy\ntitle: Escalation\n---\nescalate-canary-7731\n",
        ),
        (
            "notes/board.md",
            "---\ntype: note\ntitle: Board\nclassification: confidential\n---\nmerger-canary-4410 refunds\n",
        ),
    ])
}

fn included(d: &Disclosure, repo: &Repo) -> Vec<String> {
    let mut ids: Vec<String> = d
        .resolution
        .included
        .iter()
        .map(|s| repo.objects[s.index].id.clone())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_person_is_refused_while_findings_concern_the_answer() {
    let (_d, repo) = fixture();
    let err = resolve(&repo, &Ask::person(reader(), at())).expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("secret-detected"), "{text}");
    assert!(!text.contains("wJalrXUtnFEMI"), "never the secret: {text}");
}

#[test]
fn allowing_findings_hands_them_out_and_names_them() {
    let (_d, repo) = fixture();
    let mut ask = Ask::person(reader(), at());
    ask.findings = Findings::Allow;
    let d = resolve(&repo, &ask).expect("allowed");
    assert!(!d.let_through.is_empty());
    assert!(included(&d, &repo).contains(&"notes.creds".to_string()));
}

#[test]
fn an_agent_door_withholds_what_findings_concern_before_ranking() {
    let (_d, repo) = fixture();
    let mut ask = Ask::agent(reader(), at());
    ask.task = Some("refunds escalate".into());
    let d = resolve(&repo, &ask).expect("answers");
    let ids = included(&d, &repo);
    assert!(!ids.contains(&"notes.creds".to_string()), "{ids:?}");
    assert!(
        !ids.contains(&"policies.leaked-escalation".to_string()),
        "{ids:?}"
    );
    assert!(ids.contains(&"notes.refunds".to_string()), "{ids:?}");
    assert_eq!(
        d.withheld_for_findings,
        vec![
            "notes.creds".to_string(),
            "policies.leaked-escalation".into()
        ]
    );
    // To the consumer they look like objects outside its scope: counted, never named.
    assert!(
        d.resolution.excluded.is_empty(),
        "{:?}",
        d.resolution.excluded
    );
    let mut d = d;
    let bundle = d.compile(&repo, "2026-06-01T00:00:00Z").to_string();
    for canary in [
        "escalate-canary-7731",
        "wJalrXUtnFEMI",
        "policies/internal",
        "leaked-escalation",
        "notes.creds",
    ] {
        assert!(!bundle.contains(canary), "{canary} leaked: {bundle}");
    }
}

#[test]
fn withheld_approval_content_never_moves_the_ranking() {
    let (_d, repo) = fixture();
    let mut ask = Ask::agent(reader(), at());
    ask.task = Some("refunds".into());
    ask.release = Release::WithoutApproval("the user declined".into());
    let with_gated = resolve(&repo, &ask).expect("answers");
    assert_eq!(
        with_gated.withheld_for_approval,
        vec!["notes.board".to_string()]
    );
    assert!(!included(&with_gated, &repo).contains(&"notes.board".to_string()));
    // The same answer as a repository that never had the object: scores equal.
    let (_e, without) = repo_from(&[
        ("opencontext.yaml", MANIFEST),
        ("notes/refunds.md", "---\ntype: note\ntitle: Refunds\n---\nRefunds within 30 days.\n"),
        (
            "notes/creds.md",
            "---\ntype: note\ntitle: Deploy\n---\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        ),
        (
            "policies/internal/leak.md",
            "---\nid: policies.leaked-escalation\ntype: policy\ntitle: Escalation\n---\nescalate-canary-7731\n",
        ),
    ]);
    let plain = resolve(&without, &ask).expect("answers");
    let scores = |d: &Disclosure, r: &Repo| -> Vec<(String, u64)> {
        d.resolution
            .included
            .iter()
            .map(|s| (r.objects[s.index].id.clone(), s.score.to_bits()))
            .collect()
    };
    assert_eq!(scores(&with_gated, &repo), scores(&plain, &without));
}

#[test]
fn search_scores_approval_gated_objects_by_what_a_listing_shows() {
    let (_d, repo) = fixture();
    let declined = Release::WithoutApproval("no approval".into());
    let hits = |q: &str, r: &Release| -> Vec<String> {
        search(&repo, &reader(), at(), q, &|_| true, 10, r)
            .expect("searches")
            .hits
            .into_iter()
            .map(|(h, _)| repo.objects[h.index].id.clone())
            .collect()
    };
    // A guessed word of its content confirms nothing before approval...
    assert!(hits("merger-canary-4410", &declined).is_empty());
    // ...its title is what the listing shows anyway...
    assert_eq!(hits("board", &declined), vec!["notes.board".to_string()]);
    // ...and once released, its content is searched like any other.
    assert_eq!(
        hits("merger-canary-4410", &Release::All),
        vec!["notes.board".to_string()]
    );
}

#[test]
fn listings_and_documents_leave_out_what_findings_concern() {
    let (_d, repo) = fixture();
    let listing = list(&repo, &reader(), at(), false, &|_| true).expect("lists");
    let ids: Vec<&str> = listing
        .shown
        .iter()
        .map(|(i, _)| repo.objects[*i].id.as_str())
        .collect();
    assert!(!ids.contains(&"policies.leaked-escalation"), "{ids:?}");
    assert_eq!(listing.withheld, 2);
    let leaked = crate::model::ObjectRef::parse("policies.leaked-escalation");
    let refused = document(
        &repo,
        &reader(),
        at(),
        &leaked,
        &Private::Closed,
        Findings::Refuse,
    )
    .expect_err("refused");
    assert!(
        refused.to_string().contains("--allow-findings"),
        "{refused}"
    );
    let hidden = document(
        &repo,
        &reader(),
        at(),
        &leaked,
        &Private::Closed,
        Findings::Withhold,
    )
    .expect_err("as missing");
    let missing = document(
        &repo,
        &reader(),
        at(),
        &crate::model::ObjectRef::parse("policies.nothing-here"),
        &Private::Closed,
        Findings::Withhold,
    )
    .expect_err("missing");
    assert_eq!(hidden.exit(), missing.exit());
    assert_eq!(
        hidden
            .to_string()
            .replace("policies.leaked-escalation", "X"),
        missing.to_string().replace("policies.nothing-here", "X")
    );
}
