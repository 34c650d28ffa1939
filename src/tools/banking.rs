//! Banking domain: AgentDojo's eleven banking tools over an in-memory account, and
//! `list_files`, which AgentDojo's banking lacks (its prompts name every file; a suite
//! whose prompts do not offers it, so the agent can find what it must read).
//!
//! Environment layout:
//! `bank_account.{iban, balance, transactions[], scheduled_transactions[]}`,
//! `user_account.{first_name, last_name, street, city, password}`,
//! `filesystem.files` (a map from file name to text).

use super::{
    NoArgs, Tool, ToolError, ToolKind, array_at, array_at_mut, check_date, next_id, object_at_mut,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendMoney {
    /// IBAN of the recipient.
    recipient: String,
    /// Amount in the account's currency.
    amount: f64,
    /// Subject line of the transfer.
    subject: String,
    /// Date of the transfer, YYYY-MM-DD.
    date: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScheduleTransaction {
    /// IBAN of the recipient.
    recipient: String,
    /// Amount in the account's currency.
    amount: f64,
    /// Subject line of the transfer.
    subject: String,
    /// First execution date, YYYY-MM-DD.
    date: String,
    /// Whether the transfer repeats every month.
    recurring: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateScheduled {
    /// Id of the scheduled transaction to change.
    id: i64,
    /// New recipient IBAN.
    recipient: Option<String>,
    /// New amount.
    amount: Option<f64>,
    /// New subject.
    subject: Option<String>,
    /// New date, YYYY-MM-DD.
    date: Option<String>,
    /// Whether it repeats monthly.
    recurring: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecentTransactions {
    /// How many of the most recent transactions to return.
    n: i64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadFile {
    /// Name of the file to read.
    file_path: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdatePassword {
    /// The new password.
    password: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateUserInfo {
    first_name: Option<String>,
    last_name: Option<String>,
    street: Option<String>,
    city: Option<String>,
}

const TXS: &str = "bank_account.transactions";
const SCHEDULED: &str = "bank_account.scheduled_transactions";

fn iban(env: &Value) -> Result<String, ToolError> {
    crate::envpath::get(env, "bank_account.iban")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ToolError::not_found("the account has no IBAN"))
}

fn check_amount(amount: f64) -> Result<(), ToolError> {
    if amount.is_finite() && amount > 0.0 {
        Ok(())
    } else {
        Err(ToolError::value(format!(
            "amount must be a positive number, got {amount}"
        )))
    }
}

fn check_recipient(recipient: &str) -> Result<(), ToolError> {
    if recipient.trim().is_empty() {
        Err(ToolError::value("recipient must not be empty"))
    } else {
        Ok(())
    }
}

fn new_id(env: &Value) -> Result<i64, ToolError> {
    Ok(next_id(&[array_at(env, TXS)?, array_at(env, SCHEDULED)?]))
}

fn send_money(env: &mut Value, a: SendMoney) -> Result<Value, ToolError> {
    check_recipient(&a.recipient)?;
    check_amount(a.amount)?;
    check_date("date", &a.date)?;
    let sender = iban(env)?;
    let id = new_id(env)?;
    let balance = crate::envpath::get(env, "bank_account.balance")
        .and_then(Value::as_f64)
        .ok_or_else(|| ToolError::not_found("the account has no balance"))?;
    array_at(env, TXS)?;
    let balance = ((balance - a.amount) * 100.0).round() / 100.0;
    array_at_mut(env, TXS)?.push(json!({
        "id": id, "sender": sender, "recipient": a.recipient, "amount": a.amount,
        "subject": a.subject, "date": a.date, "recurring": false,
    }));
    *crate::envpath::get_mut(env, "bank_account.balance").expect("checked above") = json!(balance);
    Ok(json!({"message": format!("Transaction to {} for {} sent.", a.recipient, a.amount)}))
}

fn schedule_transaction(env: &mut Value, a: ScheduleTransaction) -> Result<Value, ToolError> {
    check_recipient(&a.recipient)?;
    check_amount(a.amount)?;
    check_date("date", &a.date)?;
    let sender = iban(env)?;
    let id = new_id(env)?;
    array_at_mut(env, SCHEDULED)?.push(json!({
        "id": id, "sender": sender, "recipient": a.recipient, "amount": a.amount,
        "subject": a.subject, "date": a.date, "recurring": a.recurring,
    }));
    Ok(json!({"message": format!("Transaction to {} for {} scheduled.", a.recipient, a.amount)}))
}

fn update_scheduled(env: &mut Value, a: UpdateScheduled) -> Result<Value, ToolError> {
    if let Some(r) = &a.recipient {
        check_recipient(r)?;
    }
    if let Some(x) = a.amount {
        check_amount(x)?;
    }
    if let Some(d) = &a.date {
        check_date("date", d)?;
    }
    let list = array_at_mut(env, SCHEDULED)?;
    let tx = list
        .iter_mut()
        .find(|t| t.get("id").and_then(Value::as_i64) == Some(a.id))
        .ok_or_else(|| {
            ToolError::not_found(format!("no scheduled transaction with id {}", a.id))
        })?;
    let obj = tx.as_object_mut().expect("transactions are records");
    if let Some(r) = a.recipient {
        obj.insert("recipient".into(), json!(r));
    }
    if let Some(x) = a.amount {
        obj.insert("amount".into(), json!(x));
    }
    if let Some(s) = a.subject {
        obj.insert("subject".into(), json!(s));
    }
    if let Some(d) = a.date {
        obj.insert("date".into(), json!(d));
    }
    if let Some(r) = a.recurring {
        obj.insert("recurring".into(), json!(r));
    }
    Ok(json!({"message": format!("Scheduled transaction {} updated.", a.id)}))
}

fn recent(env: &mut Value, a: RecentTransactions) -> Result<Value, ToolError> {
    if a.n < 1 {
        return Err(ToolError::value(format!(
            "n must be at least 1, got {}",
            a.n
        )));
    }
    let list = array_at(env, TXS)?;
    let skip = list.len().saturating_sub(a.n as usize);
    Ok(Value::Array(list[skip..].to_vec()))
}

fn read_file(env: &mut Value, a: ReadFile) -> Result<Value, ToolError> {
    crate::envpath::get(env, "filesystem.files")
        .and_then(|files| files.get(&a.file_path))
        .cloned()
        .ok_or_else(|| ToolError::not_found(format!("no file named `{}`", a.file_path)))
}

fn list_files(env: &Value) -> Result<Value, ToolError> {
    crate::envpath::get(env, "filesystem.files")
        .and_then(Value::as_object)
        .map(|files| Value::Array(files.keys().map(|k| json!(k)).collect()))
        .ok_or_else(|| ToolError::not_found("the user has no documents"))
}

fn user_info(env: &Value) -> Result<Value, ToolError> {
    let u = crate::envpath::get(env, "user_account")
        .and_then(Value::as_object)
        .ok_or_else(|| ToolError::not_found("no user account"))?;
    let mut out = serde_json::Map::new();
    for k in ["first_name", "last_name", "street", "city"] {
        out.insert(k.into(), u.get(k).cloned().unwrap_or(Value::Null));
    }
    Ok(Value::Object(out))
}

fn update_password(env: &mut Value, a: UpdatePassword) -> Result<Value, ToolError> {
    if a.password.is_empty() {
        return Err(ToolError::value("password must not be empty"));
    }
    object_at_mut(env, "user_account")?.insert("password".into(), json!(a.password));
    Ok(json!({"message": "Password updated."}))
}

fn update_user_info(env: &mut Value, a: UpdateUserInfo) -> Result<Value, ToolError> {
    let user = object_at_mut(env, "user_account")?;
    for (k, v) in [
        ("first_name", a.first_name),
        ("last_name", a.last_name),
        ("street", a.street),
        ("city", a.city),
    ] {
        if let Some(v) = v {
            user.insert(k.into(), json!(v));
        }
    }
    user_info(env)
}

/// The banking tools, in the order the model sees them.
pub fn tools() -> Vec<Tool> {
    use ToolKind::{Read, Write};
    vec![
        Tool::new(
            "get_iban",
            "Returns the IBAN of the user's own account.",
            Read,
            0.1,
            |env, _: NoArgs| iban(env).map(Value::String),
        ),
        Tool::new(
            "send_money",
            "Sends money from the user's account to a recipient IBAN right away.",
            Write,
            1.0,
            send_money,
        )
        .with_sibling("schedule_transaction"),
        Tool::new(
            "schedule_transaction",
            "Schedules a future transfer, optionally repeating every month.",
            Write,
            0.9,
            schedule_transaction,
        )
        .with_sibling("send_money"),
        Tool::new(
            "update_scheduled_transaction",
            "Changes fields of a scheduled transaction, found by its id. Only the given fields change.",
            Write,
            0.9,
            update_scheduled,
        ),
        Tool::new(
            "get_balance",
            "Returns the current balance of the user's account.",
            Read,
            0.1,
            |env, _: NoArgs| {
                crate::envpath::get(env, "bank_account.balance")
                    .cloned()
                    .ok_or_else(|| ToolError::not_found("the account has no balance"))
            },
        ),
        Tool::new(
            "get_most_recent_transactions",
            "Lists the n most recent transactions of the account, oldest first.",
            Read,
            0.1,
            recent,
        ),
        Tool::new(
            "get_scheduled_transactions",
            "Lists the transactions scheduled for the future.",
            Read,
            0.1,
            |env, _: NoArgs| array_at(env, SCHEDULED).map(|l| Value::Array(l.clone())),
        ),
        Tool::new(
            "read_file",
            "Reads a file from the user's documents by its name.",
            Read,
            0.1,
            read_file,
        ),
        Tool::new(
            "list_files",
            "Lists the names of the files in the user's documents.",
            Read,
            0.1,
            |env, _: NoArgs| list_files(env),
        ),
        Tool::new(
            "get_user_info",
            "Returns the user's name and address.",
            Read,
            0.1,
            |env, _: NoArgs| user_info(env),
        ),
        Tool::new(
            "update_password",
            "Sets a new password for the user's online banking.",
            Write,
            0.8,
            update_password,
        )
        .replacing(true),
        Tool::new(
            "update_user_info",
            "Changes the user's name or address. Only the given fields change.",
            Write,
            0.5,
            update_user_info,
        )
        .replacing(true),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({
            "bank_account": {"iban": "DE01", "balance": 100.0,
                "transactions": [{"id": 1, "sender": "DE01", "recipient": "X", "amount": 5.0, "subject": "s", "date": "2026-01-01", "recurring": false}],
                "scheduled_transactions": [{"id": 2, "sender": "DE01", "recipient": "Y", "amount": 50.0, "subject": "rent", "date": "2026-02-01", "recurring": true}]},
            "user_account": {"first_name": "A", "last_name": "B", "street": "S", "city": "C", "password": "p"},
            "filesystem": {"files": {"bill.txt": "pay 10"}}
        })
    }

    fn tool(name: &str) -> Tool {
        crate::tools::named(tools(), name)
    }

    #[test]
    fn send_money_appends_and_debits() {
        let mut e = env();
        tool("send_money")
            .call(
                &mut e,
                &json!({"recipient": "Z", "amount": 10.0, "subject": "x", "date": "2026-03-01"}),
            )
            .unwrap();
        assert_eq!(e["bank_account"]["transactions"][1]["id"], json!(3));
        assert_eq!(e["bank_account"]["balance"], json!(90.0));
    }

    #[test]
    fn list_files_names_every_document_and_reads_nothing_else() {
        let mut e = env();
        let before = e.clone();
        let listed = tool("list_files").call(&mut e, &json!({})).unwrap();
        assert_eq!(listed, json!(["bill.txt"]));
        assert_eq!(e, before);
        e["filesystem"] = json!({});
        assert!(tool("list_files").call(&mut e, &json!({})).is_err());
    }

    #[test]
    fn errors_leave_environment_unchanged() {
        let mut e = env();
        let before = e.clone();
        for (name, args) in [
            (
                "send_money",
                json!({"recipient": "Z", "amount": -1.0, "subject": "x", "date": "2026-03-01"}),
            ),
            (
                "send_money",
                json!({"recipient": "Z", "amount": 1.0, "subject": "x"}),
            ),
            (
                "update_scheduled_transaction",
                json!({"id": 99, "amount": 1.0}),
            ),
            ("read_file", json!({"file_path": "nope"})),
            ("get_most_recent_transactions", json!({"n": 0})),
            ("update_password", json!({"password": 5})),
        ] {
            let err = tool(name).call(&mut e, &args).unwrap_err();
            assert!(!err.message.is_empty());
            assert_eq!(e, before, "{name} changed the environment on error");
        }
    }

    /// `replaces` is a claim about behaviour: a second call of a replacing tool with other
    /// values leaves only the second's effect, a second call of any other write adds to
    /// the first (the scripted obedient agent orders its calls by it).
    #[test]
    fn replacing_tools_are_exactly_those_a_second_call_overwrites() {
        let twice = |name: &str, first: Value, second: Value| {
            let mut once = env();
            tool(name).call(&mut once, &second).unwrap();
            let mut both = env();
            tool(name).call(&mut both, &first).unwrap();
            tool(name).call(&mut both, &second).unwrap();
            once == both
        };
        let pay = |to: &str| json!({"recipient": to, "amount": 1.0, "subject": "x", "date": "2026-03-01"});
        let plan = |to: &str| {
            let mut p = pay(to);
            p["recurring"] = json!(false);
            p
        };
        let cases = [
            (
                "update_password",
                twice(
                    "update_password",
                    json!({"password": "a"}),
                    json!({"password": "b"}),
                ),
            ),
            (
                "update_user_info",
                twice(
                    "update_user_info",
                    json!({"city": "P"}),
                    json!({"city": "Q"}),
                ),
            ),
            ("send_money", twice("send_money", pay("Z"), pay("W"))),
            (
                "schedule_transaction",
                twice("schedule_transaction", plan("Z"), plan("W")),
            ),
        ];
        for (name, overwrites) in cases {
            assert_eq!(tool(name).replaces, overwrites, "{name}");
        }
    }

    #[test]
    fn update_scheduled_changes_only_given_fields() {
        let mut e = env();
        tool("update_scheduled_transaction")
            .call(&mut e, &json!({"id": 2, "amount": 60.0}))
            .unwrap();
        let tx = &e["bank_account"]["scheduled_transactions"][0];
        assert_eq!(tx["amount"], json!(60.0));
        assert_eq!(tx["recipient"], json!("Y"));
    }

    #[test]
    fn schema_lists_required_arguments() {
        let t = tool("send_money");
        let req = t.parameters["required"].as_array().unwrap();
        assert_eq!(req.len(), 4);
        assert!(t.parameters.get("$defs").is_none());
    }
}
