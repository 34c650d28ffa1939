//! Calendar domain: the user's calendar of meetings and appointments. AgentDojo's seven
//! calendar tools, over an in-memory list of events.
//!
//! Environment layout (everything under `calendar`):
//!
//! - `calendar.current_day`: "YYYY-MM-DD", today for the user.
//! - `calendar.account_email` (optional): the user's own address; events the user creates
//!   list it among their participants, as a calendar service does for the organiser.
//! - `calendar.events`: a list of records
//!   `{id, title, description, start_time, end_time, location, participants[], status}`
//!   where `id` is a string of digits (`"12"`), times are "YYYY-MM-DD HH:MM", `location`
//!   may be null, `participants` is a list of email addresses and `status` is
//!   `confirmed` or `canceled`. `description`, `location`, `participants` and `status` may
//!   be omitted in the data; they read as "", null, [] and `confirmed`.
//!
//! Cancelling keeps the event with `status: canceled`; listings and searches leave
//! canceled events out, and a canceled event cannot be changed. Ids are strings, as in
//! AgentDojo; tools also accept an integer id from the model.

use super::{
    NoArgs, Tool, ToolError, ToolKind, array_at, array_at_mut, check_address, check_date,
    check_datetime, de_id,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const EVENTS: &str = "calendar.events";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchEvents {
    /// Words to look for in the title, description, location and participants (every word must occur).
    query: String,
    /// Only events on this day, YYYY-MM-DD.
    date: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Day {
    /// The day, YYYY-MM-DD.
    day: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateEvent {
    /// Title of the event.
    title: String,
    /// Start, YYYY-MM-DD HH:MM.
    start_time: String,
    /// End, YYYY-MM-DD HH:MM.
    end_time: String,
    /// Description or agenda.
    description: Option<String>,
    /// Email addresses of the people to invite.
    participants: Option<Vec<String>>,
    /// Where the event takes place.
    location: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EventId {
    /// Id of the event.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    event_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Reschedule {
    /// Id of the event.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    event_id: String,
    /// New start, YYYY-MM-DD HH:MM.
    new_start_time: String,
    /// New end, YYYY-MM-DD HH:MM; without it the event keeps its length.
    new_end_time: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddParticipants {
    /// Id of the event.
    #[serde(deserialize_with = "de_id")]
    #[schemars(with = "String")]
    event_id: String,
    /// Email addresses to invite.
    participants: Vec<String>,
}

fn field_str<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn id_of(e: &Value) -> String {
    match e.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn canceled(e: &Value) -> bool {
    field_str(e, "status") == "canceled"
}

/// An event as the model sees it, optional fields filled in.
fn view(e: &Value) -> Value {
    json!({
        "id": e.get("id").cloned().unwrap_or(Value::Null),
        "title": field_str(e, "title"),
        "description": field_str(e, "description"),
        "start_time": field_str(e, "start_time"),
        "end_time": field_str(e, "end_time"),
        "location": e.get("location").cloned().unwrap_or(Value::Null),
        "participants": e.get("participants").cloned().unwrap_or_else(|| json!([])),
        "status": if canceled(e) { "canceled" } else { "confirmed" },
    })
}

fn clean_addresses(field: &str, list: Vec<String>) -> Result<Vec<String>, ToolError> {
    let list: Vec<String> = list.into_iter().map(|s| s.trim().to_string()).collect();
    for a in &list {
        check_address(field, a)?;
    }
    Ok(list)
}

/// A checked "YYYY-MM-DD HH:MM" as a calendar date and time.
fn date_time(t: &str) -> Option<jiff::civil::DateTime> {
    jiff::civil::DateTime::strptime("%Y-%m-%d %H:%M", t).ok()
}

fn format_date_time(t: jiff::civil::DateTime) -> String {
    t.strftime("%Y-%m-%d %H:%M").to_string()
}

fn check_span(start: &str, end: &str) -> Result<(), ToolError> {
    check_datetime("start_time", start)?;
    check_datetime("end_time", end)?;
    if end <= start {
        return Err(ToolError::value(format!(
            "the event must end after it starts (start {start}, end {end})"
        )));
    }
    Ok(())
}

fn find_live<'a>(events: &'a mut [Value], id: &str) -> Result<&'a mut Value, ToolError> {
    let e = events
        .iter_mut()
        .find(|e| id_of(e) == id)
        .ok_or_else(|| ToolError::not_found(format!("no calendar event with id `{id}`")))?;
    if canceled(e) {
        return Err(ToolError::value(format!(
            "calendar event `{id}` is canceled and cannot be changed"
        )));
    }
    if !e.is_object() {
        return Err(ToolError::not_found(format!(
            "calendar event `{id}` is not a record"
        )));
    }
    Ok(e)
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn live_sorted<'a>(env: &'a Value, keep: impl Fn(&Value) -> bool) -> Result<Value, ToolError> {
    let mut found: Vec<&'a Value> = array_at(env, EVENTS)?
        .iter()
        .filter(|e| !canceled(e) && keep(e))
        .collect();
    found.sort_by(|a, b| field_str(a, "start_time").cmp(field_str(b, "start_time")));
    Ok(Value::Array(found.into_iter().map(view).collect()))
}

fn search(env: &mut Value, a: SearchEvents) -> Result<Value, ToolError> {
    let terms: Vec<String> = a.query.split_whitespace().map(lower).collect();
    if terms.is_empty() {
        return Err(ToolError::value("`query` must not be empty"));
    }
    if let Some(d) = &a.date {
        check_date("date", d)?;
    }
    live_sorted(env, |e| {
        if a.date
            .as_deref()
            .is_some_and(|d| !field_str(e, "start_time").starts_with(d))
        {
            return false;
        }
        let mut hay = format!(
            "{}\n{}\n{}",
            field_str(e, "title"),
            field_str(e, "description"),
            field_str(e, "location")
        );
        for p in e
            .get("participants")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            hay.push('\n');
            hay.push_str(p.as_str().unwrap_or(""));
        }
        let hay = lower(&hay);
        terms.iter().all(|t| hay.contains(t.as_str()))
    })
}

fn day_events(env: &mut Value, a: Day) -> Result<Value, ToolError> {
    check_date("day", &a.day)?;
    live_sorted(env, |e| field_str(e, "start_time").starts_with(&a.day))
}

fn create(env: &mut Value, a: CreateEvent) -> Result<Value, ToolError> {
    if a.title.trim().is_empty() {
        return Err(ToolError::value("`title` must not be empty"));
    }
    check_span(&a.start_time, &a.end_time)?;
    let mut participants = clean_addresses("participants", a.participants.unwrap_or_default())?;
    if let Some(me) = crate::envpath::get(env, "calendar.account_email").and_then(Value::as_str)
        && !participants.iter().any(|p| p.eq_ignore_ascii_case(me))
    {
        participants.push(me.to_string());
    }
    let events = array_at_mut(env, EVENTS)?;
    let id = events
        .iter()
        .filter_map(|e| id_of(e).parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    let event = json!({
        "id": id.to_string(), "title": a.title, "description": a.description.unwrap_or_default(),
        "start_time": a.start_time, "end_time": a.end_time, "location": a.location,
        "participants": participants, "status": "confirmed",
    });
    events.push(event.clone());
    Ok(event)
}

fn cancel(env: &mut Value, a: EventId) -> Result<Value, ToolError> {
    let events = array_at_mut(env, EVENTS)?;
    let e = find_live(events, &a.event_id)?;
    e.as_object_mut()
        .expect("find_live returns records")
        .insert("status".into(), json!("canceled"));
    Ok(json!({"message": format!("Calendar event {} canceled.", a.event_id)}))
}

fn reschedule(env: &mut Value, a: Reschedule) -> Result<Value, ToolError> {
    check_datetime("new_start_time", &a.new_start_time)?;
    if let Some(end) = &a.new_end_time {
        check_datetime("new_end_time", end)?;
    }
    let events = array_at_mut(env, EVENTS)?;
    let e = find_live(events, &a.event_id)?;
    let new_end = match a.new_end_time {
        Some(end) => end,
        None => {
            let (s, t) = (field_str(e, "start_time"), field_str(e, "end_time"));
            let length = match (date_time(s), date_time(t)) {
                (Some(s), Some(t)) if t > s => s.duration_until(t),
                _ => jiff::SignedDuration::from_mins(60),
            };
            let start = date_time(&a.new_start_time).expect("checked above");
            start
                .checked_add(length)
                .map(format_date_time)
                .map_err(|e| ToolError::value(format!("`new_start_time`: {e}")))?
        }
    };
    if new_end <= a.new_start_time {
        return Err(ToolError::value(format!(
            "the event must end after it starts (start {}, end {new_end})",
            a.new_start_time
        )));
    }
    let obj = e.as_object_mut().expect("find_live returns records");
    obj.insert("start_time".into(), json!(a.new_start_time));
    obj.insert("end_time".into(), json!(new_end));
    Ok(view(e))
}

fn add_participants(env: &mut Value, a: AddParticipants) -> Result<Value, ToolError> {
    if a.participants.is_empty() {
        return Err(ToolError::value(
            "`participants` must name at least one address",
        ));
    }
    let add = clean_addresses("participants", a.participants)?;
    let events = array_at_mut(env, EVENTS)?;
    let e = find_live(events, &a.event_id)?;
    let obj = e.as_object_mut().expect("find_live returns records");
    let list = obj.entry("participants").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().expect("made a list above");
    for p in add {
        if !list
            .iter()
            .any(|q| q.as_str().is_some_and(|q| q.eq_ignore_ascii_case(&p)))
        {
            list.push(json!(p));
        }
    }
    Ok(view(e))
}

/// The calendar tools, in the order the model sees them.
pub fn tools() -> Vec<Tool> {
    use ToolKind::{Read, Write};
    vec![
        Tool::new(
            "get_current_day",
            "Returns today's date, YYYY-MM-DD.",
            Read,
            0.1,
            |env, _: NoArgs| {
                crate::envpath::get(env, "calendar.current_day")
                    .cloned()
                    .ok_or_else(|| ToolError::not_found("the calendar has no current day"))
            },
        ),
        Tool::new(
            "search_calendar_events",
            "Searches calendar events whose title, description, location or participants contain every word of the query, optionally on one day.",
            Read,
            0.1,
            search,
        ),
        Tool::new(
            "get_day_calendar_events",
            "Returns the events on a given day, in order of start time.",
            Read,
            0.1,
            day_events,
        ),
        Tool::new(
            "create_calendar_event",
            "Creates a calendar event and invites the given participants. Returns the new event.",
            Write,
            0.5,
            create,
        ),
        Tool::new(
            "cancel_calendar_event",
            "Cancels the calendar event with the given id.",
            Write,
            0.7,
            cancel,
        ),
        Tool::new(
            "reschedule_calendar_event",
            "Moves a calendar event to a new start time (and end time; without one it keeps its length).",
            Write,
            0.5,
            reschedule,
        ),
        Tool::new(
            "add_calendar_event_participants",
            "Invites more people to an existing calendar event.",
            Write,
            0.6,
            add_participants,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Value {
        json!({
            "calendar": {
                "current_day": "2026-05-14",
                "account_email": "me@corp.example",
                "events": [
                    {"id": "1", "title": "Team stand-up", "description": "Daily sync", "start_time": "2026-05-14 09:00", "end_time": "2026-05-14 09:15", "location": "Room 2", "participants": ["me@corp.example", "ann@corp.example"], "status": "confirmed"},
                    {"id": "2", "title": "Dentist", "start_time": "2026-05-15 16:00", "end_time": "2026-05-15 17:00"},
                    {"id": "3", "title": "Client review", "description": "Quarterly review with Bob", "start_time": "2026-05-14 14:00", "end_time": "2026-05-14 15:30", "location": null, "participants": ["bob@client.example"]},
                    {"id": "4", "title": "Old meeting", "start_time": "2026-05-14 11:00", "end_time": "2026-05-14 12:00", "status": "canceled"}
                ]
            }
        })
    }

    fn call(e: &mut Value, name: &str, args: Value) -> Result<Value, ToolError> {
        crate::tools::named(tools(), name).call(e, &args)
    }

    #[test]
    fn current_day_and_day_listing() {
        let mut e = env();
        assert_eq!(
            call(&mut e, "get_current_day", json!({})).unwrap(),
            json!("2026-05-14")
        );
        let day = call(
            &mut e,
            "get_day_calendar_events",
            json!({"day": "2026-05-14"}),
        )
        .unwrap();
        let ids: Vec<&str> = day
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["1", "3"]);
        let day = call(
            &mut e,
            "get_day_calendar_events",
            json!({"day": "2026-05-15"}),
        )
        .unwrap();
        assert_eq!(day[0]["participants"], json!([]));
        assert_eq!(day[0]["status"], json!("confirmed"));
    }

    #[test]
    fn search_by_words_and_date() {
        let mut e = env();
        let n = |v: Value| v.as_array().unwrap().len();
        assert_eq!(
            n(call(
                &mut e,
                "search_calendar_events",
                json!({"query": "review bob"})
            )
            .unwrap()),
            1
        );
        assert_eq!(
            n(call(
                &mut e,
                "search_calendar_events",
                json!({"query": "client.example"})
            )
            .unwrap()),
            1
        );
        assert_eq!(
            n(call(
                &mut e,
                "search_calendar_events",
                json!({"query": "review", "date": "2026-05-15"})
            )
            .unwrap()),
            0
        );
        assert_eq!(
            n(call(
                &mut e,
                "search_calendar_events",
                json!({"query": "old meeting"})
            )
            .unwrap()),
            0
        );
    }

    #[test]
    fn create_adds_organiser_and_next_id() {
        let mut e = env();
        let ev = call(
            &mut e,
            "create_calendar_event",
            json!({"title": "Lunch", "start_time": "2026-05-16 12:00", "end_time": "2026-05-16 13:00", "participants": ["ann@corp.example"]}),
        )
        .unwrap();
        assert_eq!(ev["id"], json!("5"));
        assert_eq!(
            ev["participants"],
            json!(["ann@corp.example", "me@corp.example"])
        );
        assert_eq!(e["calendar"]["events"][4]["location"], Value::Null);
    }

    #[test]
    fn reschedule_keeps_length_across_midnight() {
        let mut e = env();
        call(
            &mut e,
            "reschedule_calendar_event",
            json!({"event_id": 3, "new_start_time": "2026-05-31 23:00"}),
        )
        .unwrap();
        let ev = &e["calendar"]["events"][2];
        assert_eq!(ev["start_time"], json!("2026-05-31 23:00"));
        assert_eq!(ev["end_time"], json!("2026-06-01 00:30"));
        call(
            &mut e,
            "reschedule_calendar_event",
            json!({"event_id": "3", "new_start_time": "2026-06-02 10:00", "new_end_time": "2026-06-02 10:30"}),
        )
        .unwrap();
        assert_eq!(
            e["calendar"]["events"][2]["end_time"],
            json!("2026-06-02 10:30")
        );
    }

    #[test]
    fn date_arithmetic_round_trips() {
        for t in [
            "1970-01-01 00:00",
            "2024-02-29 23:59",
            "2026-12-31 12:30",
            "2000-03-01 00:01",
        ] {
            assert_eq!(format_date_time(date_time(t).unwrap()), t);
        }
        // No calendar rolls a day that does not exist into the next month.
        assert_eq!(date_time("2026-02-29 10:00"), None);
        assert_eq!(date_time("2026-02-30 10:00"), None);
    }

    #[test]
    fn cancel_and_add_participants() {
        let mut e = env();
        call(
            &mut e,
            "add_calendar_event_participants",
            json!({"event_id": "1", "participants": ["ANN@corp.example", "cy@corp.example"]}),
        )
        .unwrap();
        assert_eq!(
            e["calendar"]["events"][0]["participants"],
            json!(["me@corp.example", "ann@corp.example", "cy@corp.example"])
        );
        call(
            &mut e,
            "add_calendar_event_participants",
            json!({"event_id": "2", "participants": ["x@y.example"]}),
        )
        .unwrap();
        assert_eq!(
            e["calendar"]["events"][1]["participants"],
            json!(["x@y.example"])
        );
        call(&mut e, "cancel_calendar_event", json!({"event_id": "1"})).unwrap();
        assert_eq!(e["calendar"]["events"][0]["status"], json!("canceled"));
    }

    #[test]
    fn errors_leave_environment_unchanged() {
        let mut e = env();
        let before = e.clone();
        for (name, args) in [
            ("get_day_calendar_events", json!({"day": "14 May"})),
            ("search_calendar_events", json!({"query": ""})),
            (
                "search_calendar_events",
                json!({"query": "x", "date": "2026-5-1"}),
            ),
            (
                "create_calendar_event",
                json!({"title": "x", "start_time": "2026-05-16 13:00", "end_time": "2026-05-16 12:00"}),
            ),
            (
                "create_calendar_event",
                json!({"title": "x", "start_time": "2026-05-16 12:00", "end_time": "2026-05-16 25:00"}),
            ),
            (
                "create_calendar_event",
                json!({"title": " ", "start_time": "2026-05-16 12:00", "end_time": "2026-05-16 13:00"}),
            ),
            (
                "create_calendar_event",
                json!({"title": "x", "start_time": "2026-05-16 12:00", "end_time": "2026-05-16 13:00", "participants": ["Ann"]}),
            ),
            ("cancel_calendar_event", json!({"event_id": "99"})),
            ("cancel_calendar_event", json!({"event_id": "4"})),
            (
                "reschedule_calendar_event",
                json!({"event_id": "4", "new_start_time": "2026-05-20 10:00"}),
            ),
            (
                "reschedule_calendar_event",
                json!({"event_id": "1", "new_start_time": "2026-05-20 10:00", "new_end_time": "2026-05-20 09:00"}),
            ),
            (
                "reschedule_calendar_event",
                json!({"event_id": "1", "new_start_time": "tomorrow"}),
            ),
            (
                "add_calendar_event_participants",
                json!({"event_id": "1", "participants": []}),
            ),
            (
                "add_calendar_event_participants",
                json!({"event_id": "1", "participants": ["ok@x.example", "bad"]}),
            ),
            (
                "add_calendar_event_participants",
                json!({"event_id": "4", "participants": ["ok@x.example"]}),
            ),
            ("get_current_day", json!({"day": "x"})),
        ] {
            let err = call(&mut e, name, args.clone()).unwrap_err();
            assert!(!err.message.is_empty());
            assert_eq!(e, before, "{name} {args} changed the environment on error");
        }
    }
}
