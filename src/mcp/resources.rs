//! Resources: `context://<collection>` (metadata of what the consumer may see
//! there) and `context://<collection>/<id>` (one object, through the same
//! authorization and approval as `context_get`). `resources/read` has no
//! `isError`, so refusals are JSON-RPC errors with fixed codes:
//! [`NOT_FOUND`] (-32002) and [`REFUSED`] (-32003).

use rmcp::model::{
    ErrorData, ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Value};

use super::server::{CtxServer, Gated, NOT_FOUND, REFUSED};
use super::service::{collection_of, Query};

/// Objects listed one by one in `resources/list`; past this, the template serves them.
const MAX_LISTED_OBJECTS: usize = 1000;

pub async fn list(s: &CtxServer) -> Result<ListResourcesResult, ErrorData> {
    let rows = s
        .blocking(|svc| Ok(svc.list(None)?.rows))
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let mut per: std::collections::BTreeMap<String, usize> = Default::default();
    for r in &rows {
        *per.entry(r["collection"].as_str().unwrap_or("").to_string())
            .or_default() += 1;
    }
    let mut out: Vec<Resource> = per
        .iter()
        .map(|(c, n)| {
            Resource::new(format!("context://{c}"), c.clone())
                .with_title(format!("Collection {c}"))
                .with_description(format!(
                    "Metadata (no values) of the {n} object(s) you may see in `{c}`"
                ))
                .with_mime_type("application/json")
        })
        .collect();
    for r in rows.iter().take(MAX_LISTED_OBJECTS) {
        let (c, id) = (
            r["collection"].as_str().unwrap_or(""),
            r["id"].as_str().unwrap_or(""),
        );
        let mut res = Resource::new(format!("context://{c}/{id}"), id.to_string())
            .with_mime_type("text/markdown")
            .with_description(format!(
                "{} object, tier {}{}",
                r["type"].as_str().unwrap_or("context"),
                r["tier"].as_str().unwrap_or(""),
                if r["needs_approval"].as_bool() == Some(true) {
                    " (reading it needs the user's approval)"
                } else {
                    ""
                }
            ));
        if let Some(t) = r["title"].as_str() {
            res = res.with_title(t.to_string());
        }
        out.push(res);
    }
    Ok(ListResourcesResult::with_all_items(out))
}

pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new("context://{collection}", "collection")
            .with_description("Metadata of the objects you may see in one collection (no values)")
            .with_mime_type("application/json"),
        ResourceTemplate::new("context://{collection}/{id}", "object")
            .with_description(
                "One object as you may see it (approval needed for confidential or restricted)",
            )
            .with_mime_type("text/markdown"),
    ])
}

fn not_found(uri: &str) -> ErrorData {
    let shown = super::inert::quoted(uri);
    ErrorData::new(
        NOT_FOUND,
        format!(
            "resource {shown} is not available: no such collection or object is visible to you"
        ),
        Some(json!({ "uri": uri })),
    )
}

pub async fn read(
    s: &CtxServer,
    request: ReadResourceRequestParams,
    ctx: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, ErrorData> {
    let uri = request.uri.clone();
    let Some(rest) = uri.strip_prefix("context://") else {
        return Err(not_found(&uri));
    };
    let (collection, id) = match rest.split_once('/') {
        Some((c, id)) => (c.to_string(), Some(id.to_string())),
        None => (rest.to_string(), None),
    };
    if collection.is_empty() || collection.len() > 100 {
        return Err(not_found(&uri));
    }
    let Some(id) = id else {
        let c = collection.clone();
        let rows = s
            .blocking(move |svc| Ok(svc.list(Some(&c))?.rows))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if rows.is_empty() {
            return Err(not_found(&uri));
        }
        let text =
            serde_json::to_string_pretty(&json!({ "collection": collection, "objects": rows }))
                .unwrap_or_default();
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("application/json")
        ])
        .into());
    };
    if super::tools::check_id(&id).is_err() {
        return Err(not_found(&uri));
    }
    let args = json!({ "uri": uri });
    let want = (collection.clone(), id.clone());
    let gated = s
        .gated(
            &ctx,
            "resources/read",
            &args,
            None,
            true,
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
            move |svc, rel| {
                let mut d = svc.get(&want.1, rel)?;
                // The object must live in the collection the URI names.
                let in_collection = d
                    .repo
                    .objects
                    .iter()
                    .enumerate()
                    .any(|(i, o)| o.id == want.1 && collection_of(&d.repo, i) == want.0);
                if !in_collection {
                    d.bundle["objects"] = Value::Array(Vec::new());
                    d.sensitive.clear();
                }
                Ok((
                    d,
                    Query {
                        include: vec![want.1.clone()],
                        ..Query::default()
                    },
                ))
            },
        )
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    match gated {
        Gated::Ask(r) => Ok(r.into()),
        Gated::Refused(r) => Err(ErrorData::new(
            REFUSED,
            format!("not released: {}", r.explain()),
            Some(json!({ "uri": uri, "reason": r.code() })),
        )),
        Gated::Out {
            disclosure, query, ..
        } => {
            if disclosure.object_ids().is_empty() {
                return Err(not_found(&uri));
            }
            let (_, text) = s
                .release(*disclosure, query)
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text, uri).with_mime_type("text/markdown")
            ])
            .into())
        }
    }
}
