//! Documents (seed 004 §2): a field of `documents` is an object with a type,
//! real issue and expiry dates, and optionally the file itself, encrypted like
//! every field; anything else is refused before it is written.

use serde_json::json;

use crate::serve_support::{files, Vault};

#[test]
fn a_document_with_its_file_is_stored_encrypted_and_a_malformed_one_is_refused() {
    let v = Vault::create();
    let s = v.serve(&[]);
    let u = s.unlock(&v);
    let scan = "JVBERi0xLjQKc2Nhbm5lZCBsZWFzZQ=="; // "%PDF-1.4\nscanned lease"
    let doc = json!({
        "type": "lease",
        "issue_date": "2024-09-01",
        "expiry_date": "2025-08-31",
        "file": {"name": "lease.pdf", "media_type": "application/pdf", "base64": scan},
    });
    let r = s.put(&u, "documents.lease", doc.clone());
    r.expect(201);
    assert_eq!(r.body["sensitivity"], "sensitive");
    assert_eq!(
        s.get("/context/fields/documents.lease", Some(&u)).body["value"],
        doc
    );
    for bad in [
        json!("my lease"),
        json!({"issue_date": "2024-09-01"}),
        json!({"type": "lease", "expiry_date": "2025-02-30"}),
        json!({"type": "lease", "file": {"media_type": "application/pdf", "base64": "%%%"}}),
    ] {
        s.put(&u, "documents.passport", bad)
            .refused(400, "invalid_request");
    }
    s.get("/context/fields/documents.passport", Some(&u))
        .refused(404, "not_found");
    for (path, bytes) in files(&v.dir()) {
        let t = String::from_utf8_lossy(&bytes);
        assert!(!t.contains(scan) && !t.contains("2025-08-31"), "{path}");
    }
}
