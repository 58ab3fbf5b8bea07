//! Scalar resolution: the YAML 1.2 core schema for plain scalars, and the
//! handful of core tags we accept.
//!
//! Deliberately NOT YAML 1.1: `yes`, `no`, `on`, `off`, `y`, `n` stay strings
//! (the "Norway problem"), timestamps stay strings, and `0777` is the decimal
//! 777, not octal.
//!
//! Integers outside both `i64` and `u64` are an error rather than a lossy
//! float: a signing tool must not silently change a value it was given.
//! `.inf` / `.nan` are errors because JSON cannot represent them.
use saphyr_parser::{ScalarStyle, Tag};
use serde_json::{Number, Value};

/// The prefix every core-schema tag resolves to (`!!x` = `tag:yaml.org,2002:x`).
const CORE_PREFIX: &str = "tag:yaml.org,2002:";

/// A core tag we know how to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoreTag {
    Str,
    Int,
    Float,
    Bool,
    Null,
    Map,
    Seq,
}

/// Why a scalar (or its tag) has no value under the YAML 1.2 core schema as
/// ctx reads it. The position is added by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScalarError {
    #[error("unsupported tag `{0}` (only !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are allowed)")]
    UnsupportedTag(String),
    #[error("invalid !!{tag} value `{text}`")]
    Invalid { tag: &'static str, text: String },
    #[error("tag !!{0} applied to a scalar")]
    CollectionTag(&'static str),
    #[error("integer `{0}` is out of the 64-bit range")]
    OutOfRange(String),
    #[error("float `{0}` is out of range")]
    FloatOutOfRange(String),
    #[error("`{0}` (infinity / not-a-number) cannot be represented in JSON")]
    NotJson(String),
}

/// Map a parsed tag onto a [`CoreTag`], or explain why it is refused.
pub(crate) fn core_tag(tag: &Tag) -> Result<CoreTag, ScalarError> {
    let name = if tag.handle == CORE_PREFIX {
        Some(tag.suffix.as_str())
    } else if tag.handle.is_empty() {
        // Verbatim `!<tag:yaml.org,2002:str>` arrives with an empty handle.
        tag.suffix.strip_prefix(CORE_PREFIX)
    } else {
        None
    };
    match name {
        Some("str") => Ok(CoreTag::Str),
        Some("int") => Ok(CoreTag::Int),
        Some("float") => Ok(CoreTag::Float),
        Some("bool") => Ok(CoreTag::Bool),
        Some("null") => Ok(CoreTag::Null),
        Some("map") => Ok(CoreTag::Map),
        Some("seq") => Ok(CoreTag::Seq),
        _ => Err(ScalarError::UnsupportedTag(display_tag(tag))),
    }
}

/// Render a tag the way the user most likely wrote it.
pub(crate) fn display_tag(tag: &Tag) -> String {
    if tag.handle == CORE_PREFIX {
        format!("!!{}", tag.suffix)
    } else if tag.handle == "!" {
        format!("!{}", tag.suffix)
    } else if tag.handle.is_empty() {
        if tag.suffix == "!" {
            "!".to_string()
        } else {
            format!("!<{}>", tag.suffix)
        }
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    }
}

/// Convert a scalar event into a JSON value. Takes the text by value so that
/// strings are moved, not copied.
pub(crate) fn to_value(
    text: String,
    style: ScalarStyle,
    tag: Option<CoreTag>,
) -> Result<Value, ScalarError> {
    let invalid = |tag: &'static str, text: String| ScalarError::Invalid { tag, text };
    match tag {
        None if style == ScalarStyle::Plain => resolve_plain(text),
        None | Some(CoreTag::Str) => Ok(Value::String(text)),
        Some(CoreTag::Int) => match int(&text) {
            Some(r) => r,
            None => Err(invalid("int", text)),
        },
        // The core float pattern also matches plain digits, so `!!float 1` is 1.0.
        Some(CoreTag::Float) => match float(&text) {
            Some(r) => r,
            None => Err(invalid("float", text)),
        },
        Some(CoreTag::Bool) => match bool_(&text) {
            Some(b) => Ok(Value::Bool(b)),
            None => Err(invalid("bool", text)),
        },
        Some(CoreTag::Null) => {
            if is_null(&text) {
                Ok(Value::Null)
            } else {
                Err(invalid("null", text))
            }
        }
        Some(CoreTag::Map) => Err(ScalarError::CollectionTag("map")),
        Some(CoreTag::Seq) => Err(ScalarError::CollectionTag("seq")),
    }
}

/// Core-schema resolution of an untagged plain scalar.
pub(crate) fn resolve_plain(text: String) -> Result<Value, ScalarError> {
    let Some(&first) = text.as_bytes().first() else {
        return Ok(Value::Null);
    };
    // Fast path: most scalars are words, which can never be anything but strings.
    if !matches!(
        first,
        b'0'..=b'9' | b'+' | b'-' | b'.' | b'~' | b'n' | b'N' | b't' | b'T' | b'f' | b'F'
    ) {
        return Ok(Value::String(text));
    }
    if is_null(&text) {
        return Ok(Value::Null);
    }
    if let Some(b) = bool_(&text) {
        return Ok(Value::Bool(b));
    }
    if let Some(r) = int(&text) {
        return r;
    }
    if let Some(r) = float(&text) {
        return r;
    }
    Ok(Value::String(text))
}

/// Whether an untagged plain scalar with this text is null.
pub(crate) fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

fn bool_(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// `None` when `s` is not an integer literal; `Some(Err)` when it is one but
/// does not fit in 64 bits.
fn int(s: &str) -> Option<Result<Value, ScalarError>> {
    let out_of_range = || Err(ScalarError::OutOfRange(s.to_string()));
    let radix = |digits: &str, r: u32, ok: fn(&u8) -> bool| {
        if digits.is_empty() || !digits.as_bytes().iter().all(ok) {
            return None;
        }
        Some(u64::from_str_radix(digits, r).map_or_else(|_| out_of_range(), |n| Ok(n.into())))
    };
    if let Some(d) = s.strip_prefix("0o") {
        return radix(d, 8, |b| matches!(b, b'0'..=b'7'));
    }
    if let Some(d) = s.strip_prefix("0x") {
        return radix(d, 16, u8::is_ascii_hexdigit);
    }
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(if neg {
        // Parse with the sign so that i64::MIN is accepted.
        s.parse::<i64>()
            .map_or_else(|_| out_of_range(), |n| Ok(n.into()))
    } else {
        digits
            .parse::<u64>()
            .map_or_else(|_| out_of_range(), |n| Ok(n.into()))
    })
}

/// Core-schema float: `[-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )?`,
/// plus `.inf` / `.nan`, which are rejected as unrepresentable in JSON.
fn float(s: &str) -> Option<Result<Value, ScalarError>> {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    if matches!(&s[i..], ".inf" | ".Inf" | ".INF") || matches!(s, ".nan" | ".NaN" | ".NAN") {
        return Some(Err(ScalarError::NotJson(s.to_string())));
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let int_digits = digits(&mut i);
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        frac_digits = digits(&mut i);
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    Some(match Number::from_f64(f) {
        Some(n) => Ok(Value::Number(n)),
        None => Err(ScalarError::FloatOutOfRange(s.to_string())),
    })
}
