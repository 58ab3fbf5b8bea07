//! `server.json` (the MCP Registry's description of ctx) is valid against the
//! registry's published schema, vendored byte for byte under
//! tests/cli/fixtures/mcp-registry/ (source URL and digest in its README), and
//! agrees with the package: its name is the README's `mcp-name:` line (how the
//! registry verifies a cargo package), its version and crate are Cargo.toml's.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::project_root;

const SCHEMA_URL: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
const SCHEMA_SHA256: &str = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0";

fn read(rel: &str) -> String {
    std::fs::read_to_string(project_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn validator() -> jsonschema::Validator {
    let text = read("tests/cli/fixtures/mcp-registry/server.schema.json");
    let digest = hex::encode(Sha256::digest(text.as_bytes()));
    assert_eq!(
        digest, SCHEMA_SHA256,
        "the vendored schema is the published one"
    );
    let schema: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(schema["$id"], SCHEMA_URL);
    jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the registry schema compiles")
}

fn server() -> Value {
    serde_json::from_str(&read("server.json")).expect("server.json is JSON")
}

#[test]
fn server_json_is_valid_against_the_published_registry_schema() {
    let v = validator();
    let doc = server();
    let errors: Vec<String> = v
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(doc["$schema"], SCHEMA_URL);
    // The check can fail: what the schema forbids is refused.
    for (pointer, bad) in [
        ("/description", Value::String("x".repeat(101))),
        ("/name", Value::String("no-slash".into())),
        ("/packages/0/version", Value::String("latest".into())),
        ("/packages/0/transport/type", Value::String("pipe".into())),
    ] {
        let mut broken = doc.clone();
        *broken.pointer_mut(pointer).unwrap() = bad;
        assert!(!v.is_valid(&broken), "{pointer} should be refused");
    }
}

#[test]
fn server_json_agrees_with_the_readme_and_the_package() {
    let doc = server();
    let name = doc["name"].as_str().unwrap();
    let readme = read("README.md");
    let marker = format!("mcp-name: {name}");
    let hits: Vec<&str> = readme.lines().filter(|l| l.contains("mcp-name:")).collect();
    assert_eq!(
        hits.len(),
        1,
        "one visible mcp-name line in README.md: {hits:?}"
    );
    let at = hits[0]
        .find(&marker)
        .unwrap_or_else(|| panic!("README names {name}: {}", hits[0]));
    // The registry needs a boundary after the name (space, tag, end of line), and a
    // visible line: crates.io drops HTML comments.
    let after = hits[0][at + marker.len()..].chars().next();
    assert!(
        matches!(after, None | Some(' ' | '`' | '<' | ')')),
        "{}",
        hits[0]
    );
    assert!(
        !hits[0].contains("<!--"),
        "crates.io strips comments: {}",
        hits[0]
    );

    let cargo: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    let version = cargo["workspace"]["package"]["version"].as_str().unwrap();
    let package = cargo["package"]["name"].as_str().unwrap();
    let pkg = &doc["packages"][0];
    assert_eq!(doc["version"], version);
    assert_eq!(pkg["version"], version);
    assert_eq!(pkg["registryType"], "cargo");
    assert_eq!(pkg["identifier"], package);
    assert_eq!(
        pkg["packageArguments"][0]["value"], "mcp",
        "the registry's clients start `ctx mcp`"
    );
}
