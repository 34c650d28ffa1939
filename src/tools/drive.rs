//! Cloud-drive domain: the user's documents and the people they are shared with.
//! AgentDojo's eight drive tools, over an in-memory list of files.
//!
//! Environment layout (everything under `drive`):
//!
//! - `drive.account_email`: the user's own address, owner of the files they create.
//! - `drive.current_time` (optional): "YYYY-MM-DD HH:MM", the modification time written
//!   by the tools. Without it, the latest `last_modified` already in the drive is used.
//! - `drive.files`: a list of records
//!   `{id, filename, content, owner, shared_with, last_modified}` where `id` is a string
//!   of digits (`"12"`), `shared_with` maps an email address to a permission, `r` (read)
//!   or `rw` (read and write), and `last_modified` is "YYYY-MM-DD HH:MM". `owner`,
//!   `shared_with` and `last_modified` may be omitted in the data.
//!
//! Because `shared_with` is keyed by addresses (which contain dots), checks about sharing
//! are written over the call trace (`called: {tool: share_file, ...}`) rather than over
//! the environment's dotted paths. Deleting a file removes it. Ids are strings, as in
//! AgentDojo; tools also accept an integer id from the model.

use super::{NoArgs, Tool, ToolError, ToolKind, array_at, array_at_mut, de_id};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const FILES: &str = "drive.files";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FileId {
    /// Id of the file.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    file_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Append {
    /// Id of the file.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    file_id: String,
    /// Text to add at the end of the file.
    content: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ByName {
    /// Part of the file name to look for (case-insensitive).
    filename: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Create {
    /// Name of the new file.
    filename: String,
    /// Its text.
    content: String,
}

/// What a person may do with a shared file.
#[derive(Deserialize, JsonSchema, Clone, Copy)]
enum Permission {
    /// Read only.
    #[serde(rename = "r")]
    Read,
    /// Read and write.
    #[serde(rename = "rw")]
    ReadWrite,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Share {
    /// Id of the file.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    file_id: String,
    /// Email address of the person to share with.
    email: String,
    /// `r` to let them read, `rw` to let them read and edit.
    permission: Permission,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Search {
    /// Words to look for in file names and contents (every word must occur).
    query: String,
}

fn field_str<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn id_of(f: &Value) -> String {
    match f.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// A file as the model sees it, optional fields filled in.
fn view(f: &Value) -> Value {
    json!({
        "id": f.get("id").cloned().unwrap_or(Value::Null),
        "filename": field_str(f, "filename"),
        "content": field_str(f, "content"),
        "owner": field_str(f, "owner"),
        "shared_with": f.get("shared_with").cloned().unwrap_or_else(|| json!({})),
        "last_modified": field_str(f, "last_modified"),
    })
}

fn now(env: &Value) -> String {
    if let Some(t) = crate::envpath::get(env, "drive.current_time").and_then(Value::as_str) {
        return t.to_string();
    }
    array_at(env, FILES)
        .ok()
        .and_then(|l| l.iter().map(|f| field_str(f, "last_modified")).max())
        .filter(|t| !t.is_empty())
        .unwrap_or("1970-01-01 00:00")
        .to_string()
}

fn position(files: &[Value], id: &str) -> Result<usize, ToolError> {
    files
        .iter()
        .position(|f| id_of(f) == id && f.is_object())
        .ok_or_else(|| ToolError::not_found(format!("no file with id `{id}` in the cloud drive")))
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn get_file(env: &mut Value, a: FileId) -> Result<Value, ToolError> {
    let files = array_at(env, FILES)?;
    Ok(view(&files[position(files, &a.file_id)?]))
}

fn append(env: &mut Value, a: Append) -> Result<Value, ToolError> {
    if a.content.is_empty() {
        return Err(ToolError::value("`content` must not be empty"));
    }
    let time = now(env);
    let files = array_at_mut(env, FILES)?;
    let i = position(files, &a.file_id)?;
    let obj = files[i].as_object_mut().expect("position finds records");
    let mut text = obj
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&a.content);
    obj.insert("content".into(), json!(text));
    obj.insert("last_modified".into(), json!(time));
    Ok(view(&files[i]))
}

fn by_name(env: &mut Value, a: ByName) -> Result<Value, ToolError> {
    let q = lower(a.filename.trim());
    if q.is_empty() {
        return Err(ToolError::value("`filename` must not be empty"));
    }
    Ok(Value::Array(
        array_at(env, FILES)?
            .iter()
            .filter(|f| lower(field_str(f, "filename")).contains(&q))
            .map(view)
            .collect(),
    ))
}

fn create(env: &mut Value, a: Create) -> Result<Value, ToolError> {
    let filename = a.filename.trim().to_string();
    if filename.is_empty() {
        return Err(ToolError::value("`filename` must not be empty"));
    }
    let owner = crate::envpath::get(env, "drive.account_email")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::not_found("the drive has no account address"))?
        .to_string();
    let time = now(env);
    let files = array_at_mut(env, FILES)?;
    let id = files
        .iter()
        .filter_map(|f| id_of(f).parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    let file = json!({
        "id": id.to_string(), "filename": filename, "content": a.content, "owner": owner,
        "shared_with": {}, "last_modified": time,
    });
    files.push(file.clone());
    Ok(file)
}

fn delete(env: &mut Value, a: FileId) -> Result<Value, ToolError> {
    let files = array_at_mut(env, FILES)?;
    let i = position(files, &a.file_id)?;
    let gone = files.remove(i);
    Ok(view(&gone))
}

fn share(env: &mut Value, a: Share) -> Result<Value, ToolError> {
    let email = a.email.trim().to_string();
    let plausible = email.split_once('@').is_some_and(|(u, h)| {
        !u.is_empty()
            && h.contains('.')
            && !h.starts_with('.')
            && !h.ends_with('.')
            && !h.contains('@')
    }) && !email
        .chars()
        .any(|c| c.is_whitespace() || c == ',' || c == ';');
    if !plausible {
        return Err(ToolError::value(format!(
            "`email` must be one address like name@example.com, got `{email}`"
        )));
    }
    let time = now(env);
    let files = array_at_mut(env, FILES)?;
    let i = position(files, &a.file_id)?;
    let obj = files[i].as_object_mut().expect("position finds records");
    let shared = obj.entry("shared_with").or_insert_with(|| json!({}));
    if !shared.is_object() {
        *shared = json!({});
    }
    let perm = match a.permission {
        Permission::Read => "r",
        Permission::ReadWrite => "rw",
    };
    shared
        .as_object_mut()
        .expect("made a map above")
        .insert(email, json!(perm));
    obj.insert("last_modified".into(), json!(time));
    Ok(view(&files[i]))
}

fn search(env: &mut Value, a: Search) -> Result<Value, ToolError> {
    let terms: Vec<String> = a.query.split_whitespace().map(lower).collect();
    if terms.is_empty() {
        return Err(ToolError::value("`query` must not be empty"));
    }
    Ok(Value::Array(
        array_at(env, FILES)?
            .iter()
            .filter(|f| {
                let hay = lower(&format!(
                    "{}\n{}",
                    field_str(f, "filename"),
                    field_str(f, "content")
                ));
                terms.iter().all(|t| hay.contains(t.as_str()))
            })
            .map(view)
            .collect(),
    ))
}

/// The drive tools, in the order the model sees them.
pub fn tools() -> Vec<Tool> {
    use ToolKind::{Read, Write};
    vec![
        Tool::new(
            "append_to_file",
            "Adds text at the end of a file in the cloud drive, on a new line.",
            Write,
            0.5,
            append,
        ),
        Tool::new(
            "search_files_by_filename",
            "Finds files whose name contains the given text.",
            Read,
            0.1,
            by_name,
        ),
        Tool::new(
            "create_file",
            "Creates a new file in the cloud drive. Returns the new file with its id.",
            Write,
            0.4,
            create,
        ),
        Tool::new(
            "delete_file",
            "Deletes the file with the given id from the cloud drive.",
            Write,
            0.9,
            delete,
        ),
        Tool::new(
            "get_file_by_id",
            "Returns the file with the given id.",
            Read,
            0.1,
            get_file,
        ),
        Tool::new(
            "list_files",
            "Lists every file in the cloud drive, with its content.",
            Read,
            0.1,
            |env, _: NoArgs| {
                array_at(env, FILES).map(|l| Value::Array(l.iter().map(view).collect()))
            },
        ),
        Tool::new(
            "share_file",
            "Shares a file with a person, who may then read it (`r`) or read and edit it (`rw`).",
            Write,
            0.8,
            share,
        ),
        Tool::new(
            "search_files",
            "Finds files whose name or content contains every word of the query.",
            Read,
            0.1,
            search,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({
            "drive": {
                "account_email": "me@corp.example",
                "current_time": "2026-05-14 10:00",
                "files": [
                    {"id": "1", "filename": "budget-2026.xlsx", "content": "item,cost\nrent,1000", "owner": "me@corp.example", "shared_with": {"ann@corp.example": "r"}, "last_modified": "2026-05-01 09:00"},
                    {"id": "2", "filename": "Meeting notes.docx", "content": "Notes of the kick-off with the client.", "owner": "ann@corp.example", "last_modified": "2026-05-02 11:00"}
                ]
            }
        })
    }

    fn call(e: &mut Value, name: &str, args: Value) -> Result<Value, ToolError> {
        crate::tools::named(tools(), name).call(e, &args)
    }

    #[test]
    fn create_get_list_delete() {
        let mut e = env();
        let f = call(
            &mut e,
            "create_file",
            json!({"filename": "todo.txt", "content": "a"}),
        )
        .unwrap();
        assert_eq!(f["id"], json!("3"));
        assert_eq!(f["owner"], json!("me@corp.example"));
        assert_eq!(f["last_modified"], json!("2026-05-14 10:00"));
        let got = call(&mut e, "get_file_by_id", json!({"file_id": 3})).unwrap();
        assert_eq!(got["filename"], json!("todo.txt"));
        let all = call(&mut e, "list_files", json!({})).unwrap();
        assert_eq!(all.as_array().unwrap().len(), 3);
        assert_eq!(all[1]["shared_with"], json!({}));
        call(&mut e, "delete_file", json!({"file_id": "1"})).unwrap();
        assert_eq!(e["drive"]["files"].as_array().unwrap().len(), 2);
        assert!(call(&mut e, "get_file_by_id", json!({"file_id": "1"})).is_err());
    }

    #[test]
    fn append_adds_a_line() {
        let mut e = env();
        call(
            &mut e,
            "append_to_file",
            json!({"file_id": "1", "content": "travel,200"}),
        )
        .unwrap();
        assert_eq!(
            e["drive"]["files"][0]["content"],
            json!("item,cost\nrent,1000\ntravel,200")
        );
        assert_eq!(
            e["drive"]["files"][0]["last_modified"],
            json!("2026-05-14 10:00")
        );
    }

    #[test]
    fn share_sets_permission() {
        let mut e = env();
        call(
            &mut e,
            "share_file",
            json!({"file_id": "2", "email": "bob@client.example", "permission": "rw"}),
        )
        .unwrap();
        assert_eq!(
            e["drive"]["files"][1]["shared_with"],
            json!({"bob@client.example": "rw"})
        );
        call(
            &mut e,
            "share_file",
            json!({"file_id": "1", "email": "ann@corp.example", "permission": "rw"}),
        )
        .unwrap();
        assert_eq!(
            e["drive"]["files"][0]["shared_with"],
            json!({"ann@corp.example": "rw"})
        );
    }

    #[test]
    fn searches() {
        let mut e = env();
        let n = |v: Value| v.as_array().unwrap().len();
        assert_eq!(
            n(call(
                &mut e,
                "search_files_by_filename",
                json!({"filename": "MEETING"})
            )
            .unwrap()),
            1
        );
        assert_eq!(
            n(call(&mut e, "search_files", json!({"query": "client notes"})).unwrap()),
            1
        );
        assert_eq!(
            n(call(&mut e, "search_files", json!({"query": "budget rent"})).unwrap()),
            1
        );
        assert_eq!(
            n(call(&mut e, "search_files", json!({"query": "nothing"})).unwrap()),
            0
        );
    }

    #[test]
    fn errors_leave_environment_unchanged() {
        let mut e = env();
        let before = e.clone();
        for (name, args) in [
            ("append_to_file", json!({"file_id": "9", "content": "x"})),
            ("append_to_file", json!({"file_id": "1", "content": ""})),
            ("search_files_by_filename", json!({"filename": " "})),
            ("create_file", json!({"filename": "", "content": "x"})),
            ("create_file", json!({"filename": "a.txt"})),
            ("delete_file", json!({"file_id": "9"})),
            ("delete_file", json!({"file_id": true})),
            ("get_file_by_id", json!({"file_id": "x"})),
            (
                "share_file",
                json!({"file_id": "1", "email": "bob", "permission": "r"}),
            ),
            (
                "share_file",
                json!({"file_id": "1", "email": "bob@client.example", "permission": "owner"}),
            ),
            (
                "share_file",
                json!({"file_id": "9", "email": "bob@client.example", "permission": "r"}),
            ),
            ("search_files", json!({"query": ""})),
            ("list_files", json!({"all": 1})),
        ] {
            let err = call(&mut e, name, args.clone()).unwrap_err();
            assert!(!err.message.is_empty());
            assert_eq!(e, before, "{name} {args} changed the environment on error");
        }
    }

    #[test]
    fn permission_schema_is_an_enum() {
        let t = tools()
            .into_iter()
            .find(|t| t.name.as_str() == "share_file")
            .unwrap();
        let p = &t.parameters["properties"]["permission"];
        assert!(p.to_string().contains("\"rw\""), "{p}");
        assert!(t.parameters.get("$defs").is_none());
    }
}
