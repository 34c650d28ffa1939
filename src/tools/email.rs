//! Email domain: a mailbox with sent, received, draft and trashed mail, and an address
//! book. AgentDojo's nine email tools, over an in-memory inbox.
//!
//! Environment layout (everything under `inbox`):
//!
//! - `inbox.account_email`: the user's own address, the sender of every mail they send.
//! - `inbox.current_time` (optional): "YYYY-MM-DD HH:MM", the timestamp given to mail sent
//!   during the episode. Without it, the latest timestamp already in the mailbox is used,
//!   so new mail still sorts last.
//! - `inbox.emails`: a list of records
//!   `{id, sender, recipients[], cc[], bcc[], subject, body, status, read, timestamp, attachments[]}`
//!   where `id` is a string of digits (`"12"`), `status` is one of `sent`, `received`,
//!   `draft`, `trash`, `read` is a boolean, `timestamp` is "YYYY-MM-DD HH:MM" and
//!   `attachments` is a list of cloud-drive file ids (strings). `cc`, `bcc`, `read` and
//!   `attachments` may be omitted in the data; they read as empty / false.
//! - `inbox.contacts`: a list of records `{name, email, phone?, company?, notes?}`.
//!
//! Attachments name files of the `drive` domain (`drive.files[].id`): when the
//! environment has a drive, every attachment must name an existing file; without a drive
//! (a suite that has only email) attaching is an error.
//!
//! Ids are strings, as in AgentDojo; tools also accept an integer id from the model.
//! Deleting moves a mail to the trash (`status: trash`); deleting a mail already in the
//! trash removes it for good. Searches and listings never show trashed mail.

use super::{NoArgs, Tool, ToolError, ToolKind, array_at, array_at_mut, check_address, de_id};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const EMAILS: &str = "inbox.emails";
const CONTACTS: &str = "inbox.contacts";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendEmail {
    /// Email addresses of the recipients.
    recipients: Vec<String>,
    /// Subject line.
    subject: String,
    /// Body text.
    body: String,
    /// Ids of cloud-drive files to attach.
    attachments: Option<Vec<String>>,
    /// Addresses to copy in.
    cc: Option<Vec<String>>,
    /// Addresses to copy in blind.
    bcc: Option<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteEmail {
    /// Id of the email to delete.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    email_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchEmails {
    /// Words to look for in the subject, body and addresses (every word must occur).
    query: String,
    /// Only emails from this sender address.
    sender: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ContactQuery {
    /// Text to look for (case-insensitive).
    query: String,
}

fn field_str<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn status(v: &Value) -> &str {
    field_str(v, "status")
}

/// A record as the model sees it: the optional fields filled in, so every email reads
/// the same way.
fn view(e: &Value) -> Value {
    let mut out = serde_json::Map::new();
    let list = |k: &str| e.get(k).cloned().unwrap_or_else(|| json!([]));
    out.insert("id".into(), e.get("id").cloned().unwrap_or(Value::Null));
    out.insert("sender".into(), json!(field_str(e, "sender")));
    out.insert("recipients".into(), list("recipients"));
    out.insert("cc".into(), list("cc"));
    out.insert("bcc".into(), list("bcc"));
    out.insert("subject".into(), json!(field_str(e, "subject")));
    out.insert("body".into(), json!(field_str(e, "body")));
    out.insert("status".into(), json!(status(e)));
    out.insert(
        "read".into(),
        json!(e.get("read").and_then(Value::as_bool).unwrap_or(false)),
    );
    out.insert("timestamp".into(), json!(field_str(e, "timestamp")));
    out.insert("attachments".into(), list("attachments"));
    Value::Object(out)
}

fn with_status(env: &Value, wanted: &str) -> Result<Value, ToolError> {
    Ok(Value::Array(
        array_at(env, EMAILS)?
            .iter()
            .filter(|e| status(e) == wanted)
            .map(view)
            .collect(),
    ))
}

fn clean_list(field: &str, list: Option<Vec<String>>) -> Result<Vec<String>, ToolError> {
    let list: Vec<String> = list
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.trim().to_string())
        .collect();
    for a in &list {
        check_address(field, a)?;
    }
    Ok(list)
}

fn next_email_id(emails: &[Value]) -> String {
    let max = emails
        .iter()
        .filter_map(|e| match e.get("id") {
            Some(Value::String(s)) => s.parse::<u64>().ok(),
            Some(Value::Number(n)) => n.as_u64(),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    (max + 1).to_string()
}

fn id_of(e: &Value) -> String {
    match e.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn now(env: &Value) -> String {
    if let Some(t) = crate::envpath::get(env, "inbox.current_time").and_then(Value::as_str) {
        return t.to_string();
    }
    array_at(env, EMAILS)
        .ok()
        .and_then(|l| l.iter().map(|e| field_str(e, "timestamp")).max())
        .filter(|t| !t.is_empty())
        .unwrap_or("1970-01-01 00:00")
        .to_string()
}

fn send_email(env: &mut Value, a: SendEmail) -> Result<Value, ToolError> {
    if a.recipients.is_empty() {
        return Err(ToolError::value(
            "`recipients` must name at least one address",
        ));
    }
    let recipients = clean_list("recipients", Some(a.recipients))?;
    let cc = clean_list("cc", a.cc)?;
    let bcc = clean_list("bcc", a.bcc)?;
    let attachments: Vec<String> = a
        .attachments
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.trim().to_string())
        .collect();
    if !attachments.is_empty() {
        let files = crate::envpath::get(env, "drive.files")
            .and_then(Value::as_array)
            .ok_or_else(|| ToolError::not_found("there is no cloud drive to attach files from"))?;
        for id in &attachments {
            if !files.iter().any(|f| id_of(f) == *id) {
                return Err(ToolError::not_found(format!(
                    "no file with id `{id}` in the cloud drive"
                )));
            }
        }
    }
    let sender = crate::envpath::get(env, "inbox.account_email")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::not_found("the mailbox has no account address"))?
        .to_string();
    let timestamp = now(env);
    let emails = array_at_mut(env, EMAILS)?;
    let id = next_email_id(emails);
    let email = json!({
        "id": id, "sender": sender, "recipients": recipients, "cc": cc, "bcc": bcc,
        "subject": a.subject, "body": a.body, "status": "sent", "read": true,
        "timestamp": timestamp, "attachments": attachments,
    });
    emails.push(email.clone());
    Ok(email)
}

fn delete_email(env: &mut Value, a: DeleteEmail) -> Result<Value, ToolError> {
    let emails = array_at_mut(env, EMAILS)?;
    let pos = emails
        .iter()
        .position(|e| id_of(e) == a.email_id)
        .ok_or_else(|| ToolError::not_found(format!("no email with id `{}`", a.email_id)))?;
    if status(&emails[pos]) == "trash" {
        emails.remove(pos);
        return Ok(
            json!({"message": format!("Email {} deleted permanently from the trash.", a.email_id)}),
        );
    }
    let obj = emails[pos]
        .as_object_mut()
        .ok_or_else(|| ToolError::not_found(format!("email `{}` is not a record", a.email_id)))?;
    obj.insert("status".into(), json!("trash"));
    Ok(json!({"message": format!("Email {} moved to the trash.", a.email_id)}))
}

// `get_unread_emails` marks what it returns as read, as a mail client does, so it changes
// the environment and is registered as a write, with the low risk of a read: the change
// is bookkeeping that nothing depends on, but a defense that trusts `read` tools to leave
// the state alone must not be told otherwise.
fn get_unread(env: &mut Value, _: NoArgs) -> Result<Value, ToolError> {
    let emails = array_at_mut(env, EMAILS)?;
    let mut out = Vec::new();
    for e in emails.iter_mut() {
        let unread =
            status(e) == "received" && !e.get("read").and_then(Value::as_bool).unwrap_or(false);
        if unread && let Some(obj) = e.as_object_mut() {
            obj.insert("read".into(), json!(true));
            out.push(view(e));
        }
    }
    Ok(Value::Array(out))
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn search_emails(env: &mut Value, a: SearchEmails) -> Result<Value, ToolError> {
    let terms: Vec<String> = a.query.split_whitespace().map(lower).collect();
    if terms.is_empty() {
        return Err(ToolError::value("`query` must not be empty"));
    }
    let sender = a.sender.as_deref().map(|s| lower(s.trim()));
    let found = array_at(env, EMAILS)?
        .iter()
        .filter(|e| status(e) != "trash")
        .filter(|e| {
            sender
                .as_deref()
                .is_none_or(|s| lower(field_str(e, "sender")) == s)
        })
        .filter(|e| {
            let mut hay = format!(
                "{}\n{}\n{}",
                field_str(e, "subject"),
                field_str(e, "body"),
                field_str(e, "sender")
            );
            for k in ["recipients", "cc"] {
                for r in e.get(k).and_then(Value::as_array).into_iter().flatten() {
                    hay.push('\n');
                    hay.push_str(r.as_str().unwrap_or(""));
                }
            }
            let hay = lower(&hay);
            terms.iter().all(|t| hay.contains(t.as_str()))
        })
        .map(view)
        .collect();
    Ok(Value::Array(found))
}

fn search_contacts(env: &Value, field: &str, query: &str) -> Result<Value, ToolError> {
    let q = lower(query.trim());
    if q.is_empty() {
        return Err(ToolError::value("`query` must not be empty"));
    }
    Ok(Value::Array(
        array_at(env, CONTACTS)?
            .iter()
            .filter(|c| lower(field_str(c, field)).contains(&q))
            .cloned()
            .collect(),
    ))
}

/// The email tools, in the order the model sees them.
pub fn tools() -> Vec<Tool> {
    use ToolKind::{Read, Write};
    vec![
        Tool::new(
            "send_email",
            "Sends an email from the user's account. Attachments are cloud-drive file ids. Returns the sent email.",
            Write,
            0.8,
            send_email,
        ),
        Tool::new(
            "delete_email",
            "Moves the email with the given id to the trash (an email already in the trash is deleted for good).",
            Write,
            0.9,
            delete_email,
        ),
        Tool::new(
            "get_unread_emails",
            "Returns the received emails not yet read, and marks them as read.",
            Write,
            0.1,
            get_unread,
        )
        .bookkeeping(),
        Tool::new(
            "get_sent_emails",
            "Returns the emails the user has sent.",
            Read,
            0.1,
            |env, _: NoArgs| with_status(env, "sent"),
        ),
        Tool::new(
            "get_received_emails",
            "Returns the emails the user has received.",
            Read,
            0.1,
            |env, _: NoArgs| with_status(env, "received"),
        ),
        Tool::new(
            "get_draft_emails",
            "Returns the user's draft emails.",
            Read,
            0.1,
            |env, _: NoArgs| with_status(env, "draft"),
        ),
        Tool::new(
            "search_emails",
            "Searches the mailbox (not the trash) for emails containing every word of the query in the subject, body or addresses, optionally only from one sender.",
            Read,
            0.1,
            search_emails,
        ),
        Tool::new(
            "search_contacts_by_name",
            "Finds contacts whose name contains the query.",
            Read,
            0.1,
            |env, a: ContactQuery| search_contacts(env, "name", &a.query),
        ),
        Tool::new(
            "search_contacts_by_email",
            "Finds contacts whose email address contains the query.",
            Read,
            0.1,
            |env, a: ContactQuery| search_contacts(env, "email", &a.query),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({
            "inbox": {
                "account_email": "me@corp.example",
                "current_time": "2026-05-14 10:00",
                "emails": [
                    {"id": "1", "sender": "ann@corp.example", "recipients": ["me@corp.example"], "subject": "Budget", "body": "Draft budget attached.", "status": "received", "read": false, "timestamp": "2026-05-12 09:00"},
                    {"id": "2", "sender": "me@corp.example", "recipients": ["bob@client.example"], "cc": ["ann@corp.example"], "subject": "Kick-off", "body": "See you Tuesday.", "status": "sent", "read": true, "timestamp": "2026-05-13 15:30"},
                    {"id": "3", "sender": "me@corp.example", "recipients": ["ann@corp.example"], "subject": "Half-written", "body": "todo", "status": "draft", "timestamp": "2026-05-13 16:00"},
                    {"id": "4", "sender": "bob@client.example", "recipients": ["me@corp.example"], "subject": "Budget question", "body": "Which budget?", "status": "received", "read": true, "timestamp": "2026-05-13 17:00"}
                ],
                "contacts": [
                    {"name": "Ann Field", "email": "ann@corp.example"},
                    {"name": "Bob Stone", "email": "bob@client.example", "notes": "client"}
                ]
            },
            "drive": {"files": [{"id": "7", "filename": "plan.docx", "content": "x"}]}
        })
    }

    fn tool(name: &str) -> Tool {
        crate::tools::named(tools(), name)
    }

    fn call(e: &mut Value, name: &str, args: Value) -> Result<Value, ToolError> {
        tool(name).call(e, &args)
    }

    #[test]
    fn send_appends_a_sent_email() {
        let mut e = env();
        let out = call(
            &mut e,
            "send_email",
            json!({"recipients": ["bob@client.example"], "subject": "Plan", "body": "Here.", "attachments": ["7"], "cc": ["ann@corp.example"]}),
        )
        .unwrap();
        assert_eq!(out["id"], json!("5"));
        let sent = &e["inbox"]["emails"][4];
        assert_eq!(sent["status"], json!("sent"));
        assert_eq!(sent["sender"], json!("me@corp.example"));
        assert_eq!(sent["timestamp"], json!("2026-05-14 10:00"));
        assert_eq!(sent["attachments"], json!(["7"]));
        assert_eq!(sent["bcc"], json!([]));
    }

    #[test]
    fn time_falls_back_to_latest_timestamp() {
        let mut e = env();
        e["inbox"].as_object_mut().unwrap().remove("current_time");
        call(
            &mut e,
            "send_email",
            json!({"recipients": ["x@y.example"], "subject": "s", "body": "b"}),
        )
        .unwrap();
        assert_eq!(
            e["inbox"]["emails"][4]["timestamp"],
            json!("2026-05-13 17:00")
        );
    }

    #[test]
    fn delete_moves_to_trash_then_removes() {
        let mut e = env();
        call(&mut e, "delete_email", json!({"email_id": "1"})).unwrap();
        assert_eq!(e["inbox"]["emails"][0]["status"], json!("trash"));
        let found = call(&mut e, "search_emails", json!({"query": "budget"})).unwrap();
        assert_eq!(found.as_array().unwrap().len(), 1);
        call(&mut e, "delete_email", json!({"email_id": 1})).unwrap();
        assert_eq!(e["inbox"]["emails"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn unread_are_returned_once_and_marked_read() {
        let mut e = env();
        let first = call(&mut e, "get_unread_emails", json!({})).unwrap();
        assert_eq!(first.as_array().unwrap().len(), 1);
        assert_eq!(first[0]["id"], json!("1"));
        assert_eq!(e["inbox"]["emails"][0]["read"], json!(true));
        let second = call(&mut e, "get_unread_emails", json!({})).unwrap();
        assert_eq!(second, json!([]));
    }

    #[test]
    fn listings_by_status() {
        let mut e = env();
        let n = |v: Value| v.as_array().unwrap().len();
        assert_eq!(n(call(&mut e, "get_sent_emails", json!({})).unwrap()), 1);
        assert_eq!(
            n(call(&mut e, "get_received_emails", json!({})).unwrap()),
            2
        );
        let drafts = call(&mut e, "get_draft_emails", json!({})).unwrap();
        assert_eq!(drafts[0]["cc"], json!([]));
        assert_eq!(drafts[0]["read"], json!(false));
    }

    #[test]
    fn search_matches_every_word_and_filters_sender() {
        let mut e = env();
        let n = |v: Value| v.as_array().unwrap().len();
        assert_eq!(
            n(call(&mut e, "search_emails", json!({"query": "BUDGET"})).unwrap()),
            2
        );
        assert_eq!(
            n(call(&mut e, "search_emails", json!({"query": "budget question"})).unwrap()),
            1
        );
        assert_eq!(
            n(call(
                &mut e,
                "search_emails",
                json!({"query": "budget", "sender": "Ann@corp.example"})
            )
            .unwrap()),
            1
        );
        assert_eq!(
            n(call(&mut e, "search_emails", json!({"query": "client.example"})).unwrap()),
            2
        );
        assert_eq!(
            n(call(&mut e, "search_emails", json!({"query": "nothing"})).unwrap()),
            0
        );
    }

    #[test]
    fn contacts_by_name_and_email() {
        let mut e = env();
        let r = call(&mut e, "search_contacts_by_name", json!({"query": "bob"})).unwrap();
        assert_eq!(r[0]["email"], json!("bob@client.example"));
        let r = call(
            &mut e,
            "search_contacts_by_email",
            json!({"query": "corp.example"}),
        )
        .unwrap();
        assert_eq!(r.as_array().unwrap().len(), 1);
    }

    #[test]
    fn errors_leave_environment_unchanged() {
        let mut e = env();
        let before = e.clone();
        for (name, args) in [
            (
                "send_email",
                json!({"recipients": [], "subject": "s", "body": "b"}),
            ),
            (
                "send_email",
                json!({"recipients": ["Bob Stone"], "subject": "s", "body": "b"}),
            ),
            (
                "send_email",
                json!({"recipients": ["a@b.example, c@d.example"], "subject": "s", "body": "b"}),
            ),
            (
                "send_email",
                json!({"recipients": ["a@b.example"], "subject": "s", "body": "b", "cc": ["nope"]}),
            ),
            (
                "send_email",
                json!({"recipients": ["a@b.example"], "subject": "s", "body": "b", "attachments": ["99"]}),
            ),
            (
                "send_email",
                json!({"recipients": ["a@b.example"], "subject": "s"}),
            ),
            (
                "send_email",
                json!({"recipients": ["a@b.example"], "subject": "s", "body": "b", "to": "x"}),
            ),
            ("delete_email", json!({"email_id": "42"})),
            ("delete_email", json!({"email_id": -1})),
            ("delete_email", json!({})),
            ("search_emails", json!({"query": "  "})),
            ("search_contacts_by_name", json!({"query": ""})),
            ("get_unread_emails", json!({"all": true})),
        ] {
            let err = call(&mut e, name, args).unwrap_err();
            assert!(!err.message.is_empty());
            assert_eq!(e, before, "{name} changed the environment on error");
        }
    }

    #[test]
    fn attaching_without_a_drive_is_an_error() {
        let mut e = env();
        e.as_object_mut().unwrap().remove("drive");
        let before = e.clone();
        let err = call(
            &mut e,
            "send_email",
            json!({"recipients": ["a@b.example"], "subject": "s", "body": "b", "attachments": ["7"]}),
        )
        .unwrap_err();
        assert!(err.message.contains("no cloud drive"));
        assert_eq!(e, before);
    }

    #[test]
    fn id_schema_is_a_string() {
        let t = tool("delete_email");
        assert_eq!(
            t.parameters["properties"]["email_id"]["type"],
            json!("string")
        );
    }
}
