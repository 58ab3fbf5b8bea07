//! Approvals: what waits for the user, and the user's answers (the session, the
//! per-launch control token of `ctx approvals`, or the serving terminal).

use zeroize::Zeroizing;

use crate::approvals::{self, Decision};
use crate::personal::audit::{Action, Entry};
use crate::personal::field::inert;
use crate::personal::keys::{Purpose, VaultKeys};
use crate::personal::tokens;
use crate::personal::Tier;

use super::{lock, now, Answer, Class, Refusal, Service};

/// An approval as a front end shows it.
#[derive(Debug, Clone)]
pub struct ApprovalView {
    pub id: String,
    pub status: &'static str,
    pub action: String,
    pub consumer: String,
    pub purpose: Option<String>,
    pub fields: Vec<(String, Tier, Option<Zeroizing<String>>)>,
    pub expires_at: String,
    pub critical: Vec<String>,
    pub text: String,
}

/// An answer to an approval.
#[derive(Debug, Clone)]
pub struct Decide {
    pub approve: bool,
    /// For critical items: the ids retyped, or the password.
    pub confirmation: Option<String>,
    /// Which surface answered (`terminal`, `ctx approvals`, `http`).
    pub via: String,
}

fn view_of(a: &approvals::Approval) -> ApprovalView {
    ApprovalView {
        id: a.id.clone(),
        status: a.status.as_str(),
        action: a.ask.action.clone(),
        consumer: a.ask.consumer.clone(),
        purpose: a.ask.purpose.clone(),
        fields: a
            .ask
            .items
            .iter()
            .map(|i| (i.id.clone(), Tier::of(i.classification), i.proposed.clone()))
            .collect(),
        expires_at: crate::time::format(&a.expires_at),
        critical: a.ask.restricted().into_iter().map(str::to_string).collect(),
        text: a.ask.describe(),
    }
}

impl Service {
    fn approver(&self, bearer: Option<&str>) -> Answer<String> {
        if self.is_locked() {
            return Err(Refusal::VaultLocked);
        }
        if self.is_control(bearer) {
            return Ok("ctx approvals".into());
        }
        self.authenticate(bearer, Class::Admin)
            .map(|_| "http".into())
    }

    /// Pending approvals (the user's session or the control token).
    pub fn approvals(&self, bearer: Option<&str>) -> Answer<Vec<ApprovalView>> {
        self.approver(bearer)?;
        Ok(self.pending_approvals())
    }

    /// Pending approvals, for the serving terminal.
    pub fn pending_approvals(&self) -> Vec<ApprovalView> {
        lock(&self.access)
            .approvals
            .pending(now())
            .into_iter()
            .map(view_of)
            .collect()
    }

    /// `GET /context/approvals/{id}`: the requester polls, or the user looks.
    pub fn approval(&self, bearer: Option<&str>, id: &str) -> Answer<ApprovalView> {
        if self.is_locked() {
            return Err(Refusal::VaultLocked);
        }
        let hash = bearer.map(tokens::hash);
        let privileged = self.is_control(bearer) || self.authenticate(bearer, Class::Admin).is_ok();
        let a = lock(&self.access);
        match a.approvals.get(id) {
            Some(ap) if privileged || hash.as_deref() == Some(ap.requester.as_str()) => {
                Ok(view_of(ap))
            }
            _ => Err(Refusal::NotFound(format!("no approval {}", inert(id)))),
        }
    }

    /// Answer an approval through a front end's surface (`http`, `ctx approvals`).
    pub fn decide(&self, bearer: Option<&str>, id: &str, d: &Decide) -> Answer<ApprovalView> {
        let surface = self.approver(bearer)?;
        let d = Decide {
            via: if d.via.is_empty() {
                surface
            } else {
                d.via.clone()
            },
            ..d.clone()
        };
        self.decide_local(id, &d)
    }

    /// Answer from the serving terminal (no token: the terminal is the user's).
    pub fn decide_local(&self, id: &str, d: &Decide) -> Answer<ApprovalView> {
        if self.is_locked() {
            return Err(Refusal::VaultLocked);
        }
        // The password is checked before any lock is taken (it derives the key: slow).
        let password_ok = match d.confirmation.as_deref().map(str::trim) {
            Some(c) if d.approve && !c.is_empty() => {
                let critical = lock(&self.access)
                    .approvals
                    .get(id)
                    .map(|a| {
                        a.ask
                            .restricted()
                            .into_iter()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default();
                let mut typed: Vec<&str> = c
                    .split(|ch: char| ch == ',' || ch.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .collect();
                typed.sort_unstable();
                typed.dedup();
                let mut want: Vec<&str> = critical.iter().map(String::as_str).collect();
                want.sort_unstable();
                typed != want && self.check_password(c)
            }
            _ => false,
        };
        let decision = if d.approve {
            Decision::Approve {
                confirmation: d.confirmation.clone(),
            }
        } else {
            Decision::Deny
        };
        let view = {
            let mut a = lock(&self.access);
            let r = a
                .approvals
                .decide(id, decision, "user", &d.via, |_| password_ok, now());
            match r {
                Ok(ap) => view_of(ap),
                Err(approvals::DecideError::NotFound) => {
                    return Err(Refusal::NotFound(format!("no approval {}", inert(id))))
                }
                Err(e @ approvals::DecideError::NotPending(_)) => {
                    return Err(Refusal::Conflict(e.to_string()))
                }
                Err(e) => return Err(Refusal::InvalidRequest(e.to_string())),
            }
        };
        let consumer = view
            .consumer
            .strip_prefix("consumer ")
            .unwrap_or(&view.consumer)
            .to_string();
        let mut e = Entry::new(
            if d.approve {
                Action::Approve
            } else {
                Action::Deny
            },
            &consumer,
        )
        .fields(view.fields.iter().map(|f| f.0.clone()))
        .detail(format!("{} {} via {}", view.action, view.id, d.via));
        if !d.approve {
            e = e.denied();
        }
        self.record(e)?;
        Ok(view)
    }

    /// Is this the profile password? (Derives the key: slow, and only while unlocked.)
    fn check_password(&self, password: &str) -> bool {
        let st = self.state.read().unwrap_or_else(|p| p.into_inner());
        let Some(open) = st.as_ref() else {
            return false;
        };
        let cfg = &open.vault.config;
        VaultKeys::derive(password.as_bytes(), &open.secret, &cfg.kdf, &cfg.vault)
            .is_ok_and(|k| k.recipient(Purpose::State) == cfg.state_recipient)
    }
}
