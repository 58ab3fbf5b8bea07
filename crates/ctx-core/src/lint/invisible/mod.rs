//! Invisible characters in context text. Hidden instructions in agent files are a
//! live attack: Unicode tag characters spell out ASCII that an agent reads and a
//! person reviewing the file never sees; bidirectional controls reorder what is
//! displayed, so the reviewer reads one text and the agent gets another.
//!
//! [`find`] locates them in a string; [`findings`] turns a file's hits into
//! findings (at load, like the secret scan, so the output gate sees them);
//! [`reveal`] writes them as `<U+XXXX>` wherever ctx shows text to people.
//!
//! Legitimate uses are left alone, so the same rule serves the lint and the
//! renderers: a zero-width joiner inside an
//! emoji sequence, joiners and non-joiners between letters of the scripts that
//! need them, direction marks beside right-to-left letters, and the tag
//! sequences of the subdivision flags (England, Scotland, Wales).
//!
//! Cost: every code point involved is U+00AD or above, encoded with a lead byte
//! of 0xC2, 0xE2, 0xEF or 0xF3. ASCII text is rejected by `is_ascii` (a word at a
//! time); other text is searched for those lead bytes with `memchr`, and only
//! the candidates are decoded.

mod findings;
#[cfg(test)]
mod tests;

pub use findings::{findings, Layout, CODE};

use std::borrow::Cow;

use crate::diag::Severity;

/// What a hidden character is, most dangerous first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// U+E0000–U+E007F: invisible copies of ASCII (hidden text).
    Tag,
    /// U+202A–U+202E, U+2066–U+2069: embeddings, overrides and isolates.
    Bidi,
    /// Two or more variation selectors in a row: a character takes at most one,
    /// so a run carries hidden data ("emoji smuggling").
    VariationRun,
    /// U+200E, U+200F: left-to-right and right-to-left marks.
    DirectionMark,
    /// U+200B–U+200D, U+2060–U+2064 and U+FEFF inside text.
    ZeroWidth,
    /// U+00AD.
    SoftHyphen,
}

impl Kind {
    /// Tag characters, bidirectional controls and smuggled selectors hide or
    /// disguise text: errors. The others are mostly copy-and-paste debris: warnings.
    pub fn severity(self) -> Severity {
        match self {
            Kind::Tag | Kind::Bidi | Kind::VariationRun => Severity::Error,
            Kind::DirectionMark | Kind::ZeroWidth | Kind::SoftHyphen => Severity::Warning,
        }
    }

    /// What it is and why it matters, for a finding's message.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Tag => "Unicode tag characters (they spell out text an agent reads and a person never sees)",
            Kind::Bidi => "bidirectional controls (they reorder the display, so a reviewer reads other text than an agent gets)",
            Kind::VariationRun => "a run of variation selectors (it can smuggle hidden data behind a visible character)",
            Kind::DirectionMark => "direction marks",
            Kind::ZeroWidth => "zero-width characters",
            Kind::SoftHyphen => "soft hyphens",
        }
    }
}

/// The kind of a character that is hidden wherever it stands, before the
/// exemptions of [`find`]. (A variation selector is hidden only in a run.)
pub fn kind_of(c: char) -> Option<Kind> {
    Some(match c as u32 {
        0xE0000..=0xE007F => Kind::Tag,
        0x202A..=0x202E | 0x2066..=0x2069 => Kind::Bidi,
        0x200E | 0x200F => Kind::DirectionMark,
        0x200B..=0x200D | 0x2060..=0x2064 | 0xFEFF => Kind::ZeroWidth,
        0xAD => Kind::SoftHyphen,
        _ => return None,
    })
}

fn is_variation_selector(c: char) -> bool {
    matches!(c as u32, 0xFE00..=0xFE0F | 0xE0100..=0xE01EF)
}

/// A hidden character at byte offset `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub at: usize,
    pub ch: char,
    pub kind: Kind,
}

/// How a code point is named in findings and renderings: `U+E0041`.
pub fn notation(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

/// Could `s` hold a hidden character at all? False for ASCII, at memory speed.
pub fn may_contain(s: &str) -> bool {
    !s.is_ascii() && candidates(s.as_bytes()).next().is_some()
}

/// Offsets of the lead bytes every hidden character starts with, in order.
fn candidates(b: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut low = memchr::memchr3_iter(0xC2, 0xE2, 0xEF, b).peekable();
    let mut high = memchr::memchr_iter(0xF3, b).peekable();
    std::iter::from_fn(move || match (low.peek(), high.peek()) {
        (Some(l), Some(h)) if h < l => high.next(),
        (Some(_), _) => low.next(),
        (None, _) => high.next(),
    })
}

/// Every hidden character in `s`, in order, legitimate uses excepted (see the
/// module documentation). A U+FEFF is one wherever it stands: a file's
/// byte-order mark is the caller's to skip.
pub fn find(s: &str) -> Vec<Hit> {
    let mut out = Vec::new();
    if s.is_ascii() {
        return out;
    }
    // Runs (of tag characters or selectors) are judged whole; their tail is skipped.
    let mut resume = 0;
    for at in candidates(s.as_bytes()) {
        if at < resume {
            continue;
        }
        // Lead bytes always start a character in valid UTF-8.
        let Some(c) = s[at..].chars().next() else {
            continue;
        };
        let prev = s[..at].chars().next_back();
        let next = || s[at + c.len_utf8()..].chars().next();
        if is_variation_selector(c) {
            let run: Vec<(usize, char)> = run_of(s, at, is_variation_selector);
            resume = run.last().map_or(at, |(i, ch)| i + ch.len_utf8());
            if run.len() > 1 {
                out.extend(run.into_iter().map(|(at, ch)| Hit {
                    at,
                    ch,
                    kind: Kind::VariationRun,
                }));
            }
            continue;
        }
        let Some(kind) = kind_of(c) else {
            continue;
        };
        if kind == Kind::Tag {
            let run = run_of(s, at, |c| kind_of(c) == Some(Kind::Tag));
            resume = run.last().map_or(at, |(i, ch)| i + ch.len_utf8());
            if !(prev == Some('\u{1F3F4}') && is_flag_tags(&run)) {
                out.extend(run.into_iter().map(|(at, ch)| Hit { at, ch, kind }));
            }
            continue;
        }
        if !exempt(c, prev, next()) {
            out.push(Hit { at, ch: c, kind });
        }
    }
    out
}

/// The characters from `at` on that satisfy `pred`, with their offsets.
fn run_of(s: &str, at: usize, pred: impl Fn(char) -> bool) -> Vec<(usize, char)> {
    s[at..]
        .char_indices()
        .take_while(|(_, c)| pred(*c))
        .map(|(i, c)| (at + i, c))
        .collect()
}

/// The tag sequences of the subdivision flags in Unicode's recommended set:
/// 🏴 followed by `gbeng`, `gbsct` or `gbwls` in tag letters and a cancel tag.
fn is_flag_tags(run: &[(usize, char)]) -> bool {
    let Some(((_, last), letters)) = run.split_last() else {
        return false;
    };
    let word: String = letters
        .iter()
        .map(|(_, c)| char::from_u32(*c as u32 - 0xE0000).unwrap_or('\0'))
        .collect();
    *last == '\u{E007F}' && ["gbeng", "gbsct", "gbwls"].contains(&word.as_str())
}

/// Legitimate uses of a formatting character, judged by its neighbours.
fn exempt(c: char, prev: Option<char>, next: Option<char>) -> bool {
    let both = |f: fn(char) -> bool| prev.is_some_and(f) && next.is_some_and(f);
    match c {
        // Joiners inside emoji sequences (👩‍💻), and the joiners, non-joiners and
        // word breaks the Arabic, Indic and South-East Asian scripts are written with.
        '\u{200D}' => {
            (prev.is_some_and(|p| pictographic(p) || p == '\u{FE0F}')
                && next.is_some_and(pictographic))
                || both(needs_joiners)
        }
        '\u{200B}' | '\u{200C}' => both(needs_joiners),
        '\u{200E}' | '\u{200F}' => {
            prev.is_some_and(right_to_left) || next.is_some_and(right_to_left)
        }
        _ => false,
    }
}

/// Emoji and the symbols emoji sequences are built from (approximately
/// Extended_Pictographic, plus skin-tone modifiers).
fn pictographic(c: char) -> bool {
    matches!(c as u32, 0x1F000..=0x1FAFF | 0x2300..=0x23FF | 0x2600..=0x27BF | 0x2B00..=0x2BFF)
}

/// Letters of scripts written with zero-width (non-)joiners or word breaks:
/// Arabic, the Indic scripts, Thai, Lao, Myanmar, Khmer.
fn needs_joiners(c: char) -> bool {
    matches!(c as u32,
        0x0600..=0x08FF | 0xFB50..=0xFDFF | 0xFE70..=0xFEFC
        | 0x0900..=0x0DFF | 0x0E00..=0x0EFF | 0x1000..=0x109F | 0x1780..=0x17FF)
}

/// Letters of right-to-left scripts (Hebrew, Arabic, Syriac, Thaana, N'Ko…).
fn right_to_left(c: char) -> bool {
    matches!(c as u32, 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFC)
}

/// `s` with every hidden character [`find`] reports written as `<U+XXXX>`, the
/// notation findings use; everything else (line breaks included) unchanged. For
/// text ctx prints or writes for people and agents to read: Markdown bundles,
/// exported agent files, explanations.
pub fn reveal(s: &str) -> Cow<'_, str> {
    let hits = find(s);
    if hits.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + hits.len() * 9);
    let mut from = 0;
    for h in hits {
        out.push_str(&s[from..h.at]);
        out.push('<');
        out.push_str(&notation(h.ch));
        out.push('>');
        from = h.at + h.ch.len_utf8();
    }
    out.push_str(&s[from..]);
    Cow::Owned(out)
}
