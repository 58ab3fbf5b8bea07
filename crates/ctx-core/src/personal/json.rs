//! A small JSON writer for responses that carry field values: values are spliced in
//! as the compact JSON text the vault keeps (in wipe-on-drop buffers), so answering
//! never builds a second, unwiped tree of every value.

use zeroize::Zeroizing;

/// A JSON object under construction.
pub struct Obj {
    buf: Zeroizing<String>,
    empty: bool,
}

impl Default for Obj {
    fn default() -> Self {
        Obj::new()
    }
}

impl Obj {
    pub fn new() -> Obj {
        Obj {
            buf: Zeroizing::new(String::from("{")),
            empty: true,
        }
    }

    fn key(&mut self, k: &str) {
        if !self.empty {
            self.buf.push(',');
        }
        self.empty = false;
        self.buf
            .push_str(&serde_json::to_string(k).expect("string"));
        self.buf.push(':');
    }

    /// A member whose value is already JSON text.
    pub fn raw(mut self, k: &str, json: &str) -> Obj {
        self.key(k);
        self.buf.push_str(json);
        self
    }

    pub fn str(self, k: &str, v: &str) -> Obj {
        let t = serde_json::to_string(v).expect("string");
        self.raw(k, &t)
    }

    pub fn opt_str(self, k: &str, v: Option<&str>) -> Obj {
        match v {
            Some(v) => self.str(k, v),
            None => self,
        }
    }

    pub fn num(self, k: &str, v: u64) -> Obj {
        self.raw(k, &v.to_string())
    }

    pub fn value(self, k: &str, v: &serde_json::Value) -> Obj {
        let t = serde_json::to_string(v).expect("JSON");
        self.raw(k, &t)
    }

    /// A member holding an array of JSON texts.
    pub fn array<S: AsRef<str>>(mut self, k: &str, items: &[S]) -> Obj {
        self.key(k);
        self.buf.push('[');
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
            }
            self.buf.push_str(it.as_ref());
        }
        self.buf.push(']');
        self
    }

    pub fn finish(mut self) -> Zeroizing<String> {
        self.buf.push('}');
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_valid_json() {
        let inner = Obj::new().str("a", "x\"y").finish();
        let t = Obj::new()
            .raw("v", "{\"k\":[1]}")
            .num("n", 3)
            .array("l", &[inner.as_str(), "null"])
            .finish();
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(v["l"][0]["a"], "x\"y");
        assert_eq!(v["v"]["k"][0], 1);
    }
}
