//! Narrowing an access difference to the consumers a command names.

use super::{AccessDiff, ConsumerDiff};
use crate::error::{Error, Result};
use crate::resolve::ConsumerKind;
use crate::view::Who;

impl AccessDiff {
    /// Keep only the roles and agent `who` names (everything for the author).
    /// A name defined at neither state is a usage error.
    pub fn retain_named(&mut self, who: &Who) -> Result<()> {
        if who.is_author() {
            return Ok(());
        }
        let wanted = |c: &ConsumerDiff| match c.kind {
            ConsumerKind::Agent => who.agent.as_deref() == Some(c.name.as_str()),
            ConsumerKind::Role => who.roles.contains(&c.name),
        };
        let missing = who
            .agent
            .iter()
            .chain(who.roles.iter())
            .find(|n| !self.consumers.iter().any(|c| &c.name == *n && wanted(c)));
        if let Some(n) = missing {
            return Err(Error::Usage(format!(
                "`{n}` is not defined at either revision"
            )));
        }
        self.consumers.retain(wanted);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{PolicyChange, Standing};

    fn consumer(kind: ConsumerKind, name: &str) -> ConsumerDiff {
        ConsumerDiff {
            kind,
            name: name.into(),
            before: Standing::Absent,
            after: Standing::Absent,
            policy: PolicyChange::default(),
            visible: Vec::new(),
            invisible: Vec::new(),
            redaction: Vec::new(),
            withheld: Vec::new(),
        }
    }

    fn all() -> AccessDiff {
        AccessDiff {
            consumers: vec![
                consumer(ConsumerKind::Role, "support"),
                consumer(ConsumerKind::Role, "leads"),
                consumer(ConsumerKind::Agent, "support"),
            ],
        }
    }

    #[test]
    fn keeps_what_is_named_by_kind() {
        let mut d = all();
        d.retain_named(&Who::default()).unwrap();
        assert_eq!(d.consumers.len(), 3, "the author sees every consumer");
        let mut d = all();
        let who = Who {
            agent: Some("support".into()),
            roles: Vec::new(),
        };
        d.retain_named(&who).unwrap();
        assert_eq!(d.consumers, vec![consumer(ConsumerKind::Agent, "support")]);
        let who = Who {
            agent: None,
            roles: vec!["leads".into(), "nobody".into()],
        };
        let e = all().retain_named(&who).unwrap_err();
        assert!(
            matches!(&e, Error::Usage(m) if m.contains("`nobody`")),
            "{e}"
        );
    }
}
