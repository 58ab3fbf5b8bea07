//! Finding the source position of a node by path. This re-parses the text,
//! which is fine because it only runs when a diagnostic is being reported;
//! the hot path (`parse`) therefore never has to keep spans around.
use super::PathSeg;
use saphyr_parser::{Event, Parser, Span, StrInput};

type P<'a> = Parser<'a, StrInput<'a>>;

pub(crate) fn locate(src: &str, path: &[PathSeg<'_>]) -> Option<(u32, u32)> {
    let mut p = Parser::new_from_str(src);
    loop {
        match next(&mut p)?.0 {
            Event::DocumentStart(_) => break,
            Event::StreamEnd => return None,
            _ => {}
        }
    }
    let (ev, span) = next(&mut p)?;
    find(&mut p, ev, span, path).map(|pos| super::build::clamp(src, pos))
}

fn next<'a>(p: &mut P<'a>) -> Option<(Event<'a>, Span)> {
    p.next_event()?.ok()
}

fn pos(span: Span) -> Option<(u32, u32)> {
    Some((
        u32::try_from(span.start.line()).ok()?,
        u32::try_from(span.start.col() + 1).ok()?,
    ))
}

/// `ev`/`span` is the first event of the node that `path` is relative to.
/// Recursion depth is bounded by the path length.
fn find<'a>(p: &mut P<'a>, ev: Event<'a>, span: Span, path: &[PathSeg<'_>]) -> Option<(u32, u32)> {
    let Some((seg, rest)) = path.split_first() else {
        return pos(span);
    };
    match (seg, ev) {
        // The path continues inside an alias: the alias is the best we can point at.
        (_, Event::Alias(_)) => pos(span),
        (PathSeg::Key(k), Event::MappingStart(..)) => loop {
            let (key, key_span) = next(p)?;
            match key {
                Event::MappingEnd => return None,
                Event::Scalar(text, ..) if text == *k => {
                    if rest.is_empty() {
                        return pos(key_span);
                    }
                    let (v, v_span) = next(p)?;
                    return find(p, v, v_span, rest);
                }
                other => {
                    skip(p, &other)?;
                    let (v, _) = next(p)?;
                    skip(p, &v)?;
                }
            }
        },
        (PathSeg::Index(i), Event::SequenceStart(..)) => {
            for _ in 0..*i {
                let (item, _) = next(p)?;
                if item == Event::SequenceEnd {
                    return None;
                }
                skip(p, &item)?;
            }
            let (item, item_span) = next(p)?;
            if item == Event::SequenceEnd {
                return None;
            }
            find(p, item, item_span, rest)
        }
        _ => None,
    }
}

/// Consume the remainder of the node whose first event was `first`.
fn skip(p: &mut P<'_>, first: &Event<'_>) -> Option<()> {
    if !matches!(first, Event::MappingStart(..) | Event::SequenceStart(..)) {
        return Some(());
    }
    let mut depth = 1usize;
    while depth > 0 {
        match next(p)?.0 {
            Event::MappingStart(..) | Event::SequenceStart(..) => depth += 1,
            Event::MappingEnd | Event::SequenceEnd => depth -= 1,
            Event::StreamEnd => return None,
            _ => {}
        }
    }
    Some(())
}
