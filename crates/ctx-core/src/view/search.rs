//! Lexical search over a view: the same BM25 as task ranking, over the same redacted
//! content, so a redacted value can neither be found nor confirmed by a guess.

use crate::object::ContextObject;
use crate::resolve::rank;

use super::View;

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index into `repo.objects`.
    pub index: usize,
    pub score: f64,
}

impl View<'_> {
    /// The current objects this consumer may see that `keep` accepts, scored against
    /// `query` (best first, ties by id); objects whose content is withheld are not searched.
    pub fn search(
        &self,
        query: &str,
        keep: &dyn Fn(&ContextObject) -> bool,
        limit: usize,
    ) -> Vec<Hit> {
        self.search_where(query, keep, &|_| true, &|_| false, limit)
    }

    /// [`View::search`] over the visible objects at indexes `shown_at` accepts; for
    /// those `metadata_only` names, only what a listing shows (id and title) is scored:
    /// content, summary and tags that need approval are not indexed before it is given. Objects outside the
    /// corpus never reach the statistics, so they cannot move another object's score.
    pub fn search_where(
        &self,
        query: &str,
        keep: &dyn Fn(&ContextObject) -> bool,
        shown_at: &dyn Fn(usize) -> bool,
        metadata_only: &(dyn Fn(&ContextObject) -> bool + Sync),
        limit: usize,
    ) -> Vec<Hit> {
        let objects = &self.repo().objects;
        let mut order = Vec::new();
        let mut shown = Vec::new();
        for (i, _) in self.visible(false) {
            if !keep(&objects[i]) || !shown_at(i) {
                continue;
            }
            if metadata_only(&objects[i]) {
                order.push(i);
                shown.push(super::Shown::default());
                continue;
            }
            if let Ok(s) = self.inline_content(i) {
                order.push(i);
                shown.push(s);
            }
        }
        let texts: Vec<_> = shown.iter().map(|s| s.content.as_deref()).collect();
        let listed_only = |i: usize| metadata_only(&objects[i]);
        let scores = rank::scores_where(objects, &order, &texts, &listed_only, Some(query));
        let mut hits: Vec<Hit> = order
            .into_iter()
            .zip(scores)
            .filter(|(_, s)| *s > 0.0)
            .map(|(index, score)| Hit { index, score })
            .collect();
        hits.sort_by(|x, y| {
            y.score
                .partial_cmp(&x.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(objects[x.index].id.cmp(&objects[y.index].id))
        });
        hits.truncate(limit);
        hits
    }
}
