//! An example pack on WIT 0.2, written with the SDK: its prompts ask the
//! user for what they need instead of failing. `translate` is a template
//! that asks for the text and the language when the client leaves them out;
//! `draft_email` is code that asks for the recipient, tone, length and
//! sign-off in one form of typed fields, with state of its own.

use prompt_pack::v0_2::*;

struct WritingAssistant;

const LANGUAGES: &[&str] = &["English", "French", "German", "Spanish"];
const TONES: &[&str] = &["friendly", "formal"];

/// The state `draft_email` hands back with its form, and expects back.
const EMAIL_STATE: &[u8] = b"draft_email/1";

fn translate() -> Template {
    template("translate", "Translates a text into another language")
        .title("Translate text")
        .argument(optional("text", "The text to translate"))
        .argument(optional("language", "The language to translate into"))
        .choices("language", LANGUAGES)
        .ask_for("text", "What text should be translated?")
        .ask_for("language", "Into which language?")
        .user("Translate this text into {language}:\n\n{text}")
}

fn draft_email() -> Prompt {
    prompt("draft_email", "Drafts an email about a topic").title("Draft an email").argument(required("topic", "What the email is about"))
}

/// The form `draft_email` asks the user to fill in.
fn email_form() -> Form {
    form("email", "Who is the email for, and how should it read?")
        .field(string_field("recipient", "Whom the email is to").title("Recipient"))
        .field(enum_field("tone", "How it should sound", TONES).default("friendly"))
        .field(integer_field("words", "About how many words").optional().default(150))
        .field(boolean_field("sign_off", "Whether to end with a sign-off").optional().default(true))
}

fn answer_draft_email(arguments: &Arguments, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
    let topic = arguments.require("topic")?;
    let Some(input) = input else {
        return Ok(ask([email_form()]).with_state(EMAIL_STATE).into());
    };
    if input.state != EMAIL_STATE {
        return Err(PromptError::Internal("the state did not come back unchanged".into()));
    }
    if matches!(input.response("email"), Some(FormResponse::Decline | FormResponse::Cancel)) {
        return Err(PromptError::InvalidArguments("an email needs a recipient, and the user declined to give one".into()));
    }
    let Some(recipient) = input.value("email", "recipient").and_then(FieldValue::as_str) else {
        // Not answered yet: ask again.
        return Ok(ask([email_form()]).with_state(EMAIL_STATE).into());
    };
    let tone = input.value("email", "tone").and_then(FieldValue::as_str).unwrap_or("friendly");
    let words = input.value("email", "words").and_then(FieldValue::as_i64).unwrap_or(150);
    let sign_off = input.value("email", "sign_off").and_then(FieldValue::as_bool).unwrap_or(true);
    let ending = if sign_off { " End it with a sign-off." } else { "" };
    let text = format!("Draft a {tone} email of about {words} words to {recipient} about {topic}.{ending}");
    Ok(reply([user_text(text)]).described("Email draft").into())
}

impl Guest for WritingAssistant {
    fn describe_pack() -> PackInfo {
        prompt_pack::cargo_pack_info!()
    }

    fn list_prompts() -> Vec<Prompt> {
        vec![translate().declaration(), draft_email()]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        let arguments = Arguments::from(arguments);
        match name.as_str() {
            "translate" => translate().answer(&arguments, input.as_ref()),
            "draft_email" => answer_draft_email(&arguments, input),
            _ => Err(PromptError::NotFound),
        }
    }

    fn complete(prompt: String, argument: String, value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        match prompt.as_str() {
            "translate" => Ok(translate().complete(&argument, &value)),
            "draft_email" => Ok(no_completions()),
            _ => Err(PromptError::NotFound),
        }
    }
}

prompt_pack::v0_2::export_pack!(WritingAssistant);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_passes_the_checks_the_host_runs_at_load() {
        assert_eq!(check_templates(&[translate()]), Ok(()));
    }

    #[test]
    fn an_email_is_drafted_from_the_form() {
        let arguments = vec![argument("topic", "the launch")];
        let asked = WritingAssistant::get_prompt("draft_email".into(), arguments.clone(), None).unwrap();
        assert_eq!(asked.into_input_required(), Some(ask([email_form()]).with_state(EMAIL_STATE)));
        let input = answers([FormAnswer {
            key: "email".into(),
            response: FormResponse::Accept(vec![
                FieldAnswer { name: "recipient".into(), value: "Ada".into() },
                FieldAnswer { name: "tone".into(), value: "formal".into() },
                FieldAnswer { name: "sign_off".into(), value: false.into() },
            ]),
        }])
        .with_state(EMAIL_STATE);
        let answer = WritingAssistant::get_prompt("draft_email".into(), arguments, Some(input)).unwrap();
        assert_eq!(
            answer.into_reply().unwrap().messages,
            [user_text("Draft a formal email of about 150 words to Ada about the launch.")]
        );
    }
}
