//! Arbitrary bytes through front-matter splitting, YAML parsing and `locate`:
//! nothing may panic, errors must carry 1-based positions, and the YAML fast
//! path must agree exactly with the saphyr event path whenever it answers.
#![no_main]

use ctx_core::frontmatter;
use ctx_core::yaml::{self, PathSeg};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    match frontmatter::split(src) {
        Ok(split) => {
            assert!(split.body.len() <= src.len());
            if let Some(fm) = split.yaml {
                assert_eq!(split.yaml_line, 2);
                check(fm);
            }
        }
        Err(e) => assert_eq!(e.line, 1),
    }
    check(src);
});

fn check(src: &str) {
    let result = yaml::parse(src);
    if let Some(fast) = yaml::parse_fast(src) {
        assert_eq!(
            Ok(&fast),
            yaml::parse_events(src).as_ref(),
            "fast path disagrees"
        );
        assert_eq!(Ok(&fast), result.as_ref());
    }
    // YAML also breaks lines at a lone `\r`, so count both kinds of break.
    let breaks = src.bytes().filter(|&b| b == b'\n' || b == b'\r').count();
    let lines = u32::try_from(breaks + 1).unwrap_or(u32::MAX);
    if let Err(e) = &result {
        assert!(e.line >= 1 && e.column >= 1, "{e:?}");
        assert!(e.line <= lines, "{e:?} beyond {lines} lines");
    }
    let first_key = match &result {
        Ok(Value::Object(map)) => map.keys().next().cloned(),
        _ => None,
    };
    let mut paths: Vec<Vec<PathSeg<'_>>> = vec![
        vec![],
        vec![PathSeg::Index(0)],
        vec![PathSeg::Key("id")],
        vec![PathSeg::Key("a"), PathSeg::Index(1), PathSeg::Key("b")],
    ];
    if let Some(k) = &first_key {
        paths.push(vec![PathSeg::Key(k), PathSeg::Index(0)]);
        paths.push(vec![PathSeg::Key(k)]);
    }
    for path in &paths {
        if let Some((line, column)) = yaml::locate(src, path) {
            assert!(line >= 1 && column >= 1 && line <= lines);
        }
    }
}
