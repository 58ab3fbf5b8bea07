//! `sqlite://<path>?table=<t>&id=<value>&column=<c>[&key=<k>]`: one cell of a local
//! database, opened read-only. Table and column names must be plain identifiers that
//! the database's own catalogue lists; the row key is always bound as a parameter,
//! so authored input never becomes SQL.

use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{types::ValueRef, Connection, OpenFlags};

use crate::manifest::Manifest;
use crate::model::Trust;

use super::{AdapterError, AdapterOptions, Loaded};

/// A parsed `sqlite://` URI.
#[derive(Debug, PartialEq, Eq)]
struct Query {
    path: String,
    table: String,
    id: String,
    column: String,
    key: String,
}

/// `%XX` escapes decoded; anything else is kept as written.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A plain SQL identifier: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn plain_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn parse(uri: &str) -> Result<Query, AdapterError> {
    let bad = |why: String| AdapterError::unavailable(uri, why);
    let rest = uri
        .strip_prefix("sqlite://")
        .ok_or_else(|| bad("not a sqlite:// URI".into()))?;
    let (path, query) = rest.split_once('?').ok_or_else(|| {
        bad(
            "expected sqlite://<path>?table=<table>&id=<value>&column=<column>[&key=<column>]"
                .into(),
        )
    })?;
    let path =
        percent_decode(path).ok_or_else(|| bad("the path has a malformed %-escape".into()))?;
    let (mut table, mut id, mut column, mut key) = (None, None, None, None);
    for pair in query.split('&') {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("query part `{pair}` is not name=value")))?;
        let v = percent_decode(v).ok_or_else(|| bad(format!("`{k}` has a malformed %-escape")))?;
        let slot = match k {
            "table" => &mut table,
            "id" => &mut id,
            "column" => &mut column,
            "key" => &mut key,
            other => {
                return Err(bad(format!(
                    "unknown query parameter `{other}` (expected table, id, column, key)"
                )))
            }
        };
        if slot.replace(v).is_some() {
            return Err(bad(format!("query parameter `{k}` is given twice")));
        }
    }
    let need = |v: Option<String>, name: &str| {
        v.filter(|s| !s.is_empty())
            .ok_or_else(|| bad(format!("missing `{name}=` in the query")))
    };
    let q = Query {
        path,
        table: need(table, "table")?,
        id: need(id, "id")?,
        column: need(column, "column")?,
        key: key.unwrap_or_else(|| "id".into()),
    };
    for (what, name) in [("table", &q.table), ("column", &q.column), ("key", &q.key)] {
        if !plain_identifier(name) {
            return Err(bad(format!(
                "{what} `{name}` is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*)"
            )));
        }
    }
    Ok(q)
}

fn sql_err(uri: &str, e: rusqlite::Error) -> AdapterError {
    AdapterError::unavailable(uri, format!("sqlite: {e}"))
}

/// Open read-only, refuse writes and side-effecting schema functions, and interrupt
/// any statement still running at the deadline.
fn open(uri: &str, path: &std::path::Path, timeout: Duration) -> Result<Connection, AdapterError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_err(uri, e))?;
    conn.busy_timeout(timeout).map_err(|e| sql_err(uri, e))?;
    conn.pragma_update(None, "query_only", true)
        .map_err(|e| sql_err(uri, e))?;
    conn.pragma_update(None, "trusted_schema", false)
        .map_err(|e| sql_err(uri, e))?;
    Ok(conn)
}

/// Does the catalogue list `table` as a table or view?
fn table_exists(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = st.query_map([table], |r| r.get::<_, String>(0))?;
    names.collect()
}

pub fn load(uri: &str, m: &Manifest, opts: &AdapterOptions) -> Result<Loaded, AdapterError> {
    let q = parse(uri)?;
    let real = super::lane::local_path(m, uri, &q.path)?;
    // SQLite opens whatever it is given; a FIFO would block the open itself.
    crate::fs::open_regular(&real).map_err(|e| super::file::read_error(uri, e))?;
    let timeout = super::timeout(m, "sqlite", opts);
    let conn = open(uri, &real, timeout)?;
    let (stop, stopped) = mpsc::channel::<()>();
    let handle = conn.get_interrupt_handle();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(timeout) {
            handle.interrupt();
        }
    });
    let result = read_cell(uri, &conn, &q, opts.max_bytes);
    drop(stop);
    let _ = watchdog.join();
    super::file::text(
        uri,
        result?,
        None,
        super::adapter_trust(m, "sqlite", Trust::Verified),
    )
}

fn read_cell(uri: &str, conn: &Connection, q: &Query, max: u64) -> Result<Vec<u8>, AdapterError> {
    if !table_exists(conn, &q.table).map_err(|e| sql_err(uri, e))? {
        return Err(AdapterError::unavailable(
            uri,
            format!("the database has no table `{}`", q.table),
        ));
    }
    let cols = columns(conn, &q.table).map_err(|e| sql_err(uri, e))?;
    for (what, name) in [("column", &q.column), ("key", &q.key)] {
        if !cols.iter().any(|c| c == name) {
            return Err(AdapterError::unavailable(
                uri,
                format!(
                    "table `{}` has no {what} `{name}` (columns: {})",
                    q.table,
                    cols.join(", ")
                ),
            ));
        }
    }
    // Identifiers are catalogue-verified plain names, so quoting them is exact.
    let sql = format!(
        "SELECT \"{}\" FROM \"{}\" WHERE \"{}\" = ?1 LIMIT 2",
        q.column, q.table, q.key
    );
    let mut st = conn.prepare(&sql).map_err(|e| sql_err(uri, e))?;
    let mut rows = st.query([&q.id]).map_err(|e| sql_err(uri, e))?;
    let row = rows.next().map_err(|e| sql_err(uri, e))?.ok_or_else(|| {
        AdapterError::unavailable(
            uri,
            format!("table `{}` has no row with {} = {:?}", q.table, q.key, q.id),
        )
    })?;
    let bytes = match row.get_ref(0).map_err(|e| sql_err(uri, e))? {
        // Checked before copying: an oversized cell is never duplicated in memory.
        ValueRef::Text(t) | ValueRef::Blob(t) if t.len() as u64 > max => {
            return Err(AdapterError::unavailable(
                uri,
                format!("larger than {max} bytes"),
            ))
        }
        ValueRef::Text(t) | ValueRef::Blob(t) => t.to_vec(),
        ValueRef::Integer(i) => i.to_string().into_bytes(),
        ValueRef::Real(r) => r.to_string().into_bytes(),
        ValueRef::Null => {
            return Err(AdapterError::unavailable(
                uri,
                format!("column `{}` is NULL for {} = {:?}", q.column, q.key, q.id),
            ))
        }
    };
    if bytes.len() as u64 > max {
        return Err(AdapterError::unavailable(
            uri,
            format!("larger than {max} bytes"),
        ));
    }
    if rows.next().map_err(|e| sql_err(uri, e))?.is_some() {
        return Err(AdapterError::unavailable(
            uri,
            format!(
                "more than one row of `{}` has {} = {:?}; the key must name exactly one",
                q.table, q.key, q.id
            ),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
