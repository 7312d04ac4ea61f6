//! `prompts/get`: the arguments checked, the missing ones asked for, the
//! pack called, in as many rounds as its forms take.

use rmcp::model::{GetPromptRequestParams, GetPromptResponse, InputResponses};

use super::{Asking, Caller, UseCases, check_argument_size, plugin_call, unknown_prompt};
use crate::catalog::Entry;
use crate::convert;
use crate::error::{self, RequestError};
use crate::identity::Principal;
use crate::input::{self, Answers, Binding, Forms, InputError};
use crate::metrics;
use prompt_host_kernel::model::{self, PromptAnswer};
use prompt_host_kernel::plugin::Plugin;

/// Why the `get` command could not answer a form.
const GET_CANNOT_ASK: &str =
    "the get command has no answer for it: give --answer FIELD=VALUE for each required field, or run it on a terminal to be asked";

impl UseCases {
    /// Answers a `prompts/get`: resolves the name, checks the arguments, and
    /// any answers to forms against the forms sealed in `requestState`, and
    /// runs the owning plugin; if it asks for input, asks the client as
    /// `caller.asking` allows. A `requestState` is sealed for, and opens
    /// only for, `caller.principal`.
    pub async fn get(&self, request: GetPromptRequestParams, caller: &Caller) -> Result<GetPromptResponse, RequestError> {
        let snapshot = self.registry.snapshot();
        let (entry, plugin) = snapshot.resolve(&request.name).ok_or_else(|| unknown_prompt(&snapshot, &request.name))?;
        let name = request.name.clone();
        let response = self.answer_get(entry, plugin, request, caller).await;
        let outcome = match &response {
            Ok(GetPromptResponse::Complete(_)) => metrics::OK,
            Ok(_) => metrics::INPUT_REQUIRED,
            Err(error) => error.outcome(),
        };
        metrics::prompt_served(plugin.id(), &name, outcome);
        response
    }

    /// Answers a `prompts/get` of `entry`, served by `plugin`: the
    /// arguments checked, the missing ones asked for (when the prompt asks
    /// for them), the typed ones checked against their kinds, and then the
    /// pack called, in as many rounds as its forms take.
    async fn answer_get(
        &self,
        entry: &Entry,
        plugin: &Plugin,
        request: GetPromptRequestParams,
        caller: &Caller,
    ) -> Result<GetPromptResponse, RequestError> {
        let mut call = self.opened_get(entry, plugin, request, &caller.principal)?;
        if !call.missing().is_empty()
            && let Some(response) = self.fill_missing(&mut call, &caller.asking).await?
        {
            return Ok(response);
        }
        call.check_arguments()?;
        self.call_in_rounds(call, &caller.asking).await
    }

    /// A `prompts/get` opened: its arguments as the client sent them, sized,
    /// and (unless the prompt asks for its missing arguments) all there;
    /// with a retry, the forms sealed in its state opened, and the answers
    /// to them taken.
    fn opened_get<'a>(
        &self,
        entry: &'a Entry,
        plugin: &'a Plugin,
        request: GetPromptRequestParams,
        principal: &'a Principal,
    ) -> Result<GetCall<'a>, RequestError> {
        let arguments = convert::arguments(request.arguments.as_ref())
            .map_err(|problem| RequestError::NonStringArgument { prompt: request.name.clone(), problem })?;
        check_argument_size(&request.name, &arguments, plugin.limits(), 0)?;
        let mut call = GetCall {
            entry,
            plugin,
            principal,
            name: request.name,
            sent: arguments.len(),
            arguments,
            answered: Vec::new(),
            input: None,
            unanswered: None,
            asked_for_arguments: false,
        };
        let asks_for_missing = entry.typed.as_ref().is_some_and(|typed| typed.asks_for_missing);
        if !asks_for_missing {
            let missing = call.missing();
            if !missing.is_empty() {
                return Err(RequestError::MissingArguments { prompt: call.name, missing });
            }
        }
        // A retry: the forms sealed in the state, and the arguments answered
        // through the host's form in an earlier round; a form left
        // unanswered is asked for again. Answers without a state answer
        // nothing asked: ignored.
        if let Some(state) = &request.request_state {
            let forms = self.seal.open(state, &call.binding(), plugin.limits()).map_err(|problem| call.input_error(problem))?;
            call.answered = forms.carried();
            match forms.answers(request.input_responses.as_ref()).map_err(|problem| call.input_error(problem))? {
                Answers::Complete(answers) if forms.is_for_arguments() => {
                    call.answered.extend(input::answered_arguments(&answers));
                    call.asked_for_arguments = true;
                }
                Answers::Complete(answers) => call.input = Some(answers),
                Answers::Missing => call.unanswered = Some(forms),
            }
        }
        add_answered(&mut call.arguments, &call.answered);
        Ok(call)
    }

    /// Asks for `call`'s missing arguments with the host's form, if its
    /// prompt asks for them (0.3.1), the client can be asked and has not
    /// just declined it: now, or with an `InputRequiredResult` (then that is
    /// the answer). Past that, a missing argument is -32602, as for every
    /// other prompt.
    async fn fill_missing(&self, call: &mut GetCall<'_>, asking: &Asking) -> Result<Option<GetPromptResponse>, RequestError> {
        // The values the client did pass are checked first: no form for
        // a request that would be refused anyway.
        if let Some(typed) = &call.entry.typed {
            typed.apply(&mut call.arguments.clone()).map_err(|refused| call.invalid_argument(refused))?;
        }
        let form = match call.unanswered.take() {
            Some(forms) if forms.is_for_arguments() => Some(forms),
            _ if call.asked_for_arguments || matches!(asking, Asking::Cannot(_)) => None,
            _ => form_for_missing(call.entry, call.plugin, &call.missing()),
        };
        if let Some(form) = form {
            if let Asking::InputRequired = asking {
                return Ok(Some(GetPromptResponse::InputRequired(self.seal.ask(&form.carrying(&call.answered), &call.binding()))));
            }
            let cannot_ask = |why| call.input_error(cannot_ask(call.entry, &form, why));
            let responses = self.ask_now(&call.name, asking, &form, cannot_ask).await?;
            if let Answers::Complete(answers) = form.answers(Some(&responses)).map_err(|problem| call.input_error(problem))? {
                call.answered = input::answered_arguments(&answers);
                add_answered(&mut call.arguments, &call.answered);
            }
        }
        let missing = call.missing();
        if !missing.is_empty() {
            return Err(RequestError::MissingArguments { prompt: call.name.clone(), missing });
        }
        Ok(None)
    }

    /// Calls the pack with `call`'s arguments, and while it answers with
    /// forms, asks the client (now, or with an `InputRequiredResult`, which
    /// is then the answer) and calls it again with the answers, at most
    /// [`input::MAX_ELICITATION_ROUNDS`] times.
    async fn call_in_rounds(&self, mut call: GetCall<'_>, asking: &Asking) -> Result<GetPromptResponse, RequestError> {
        let (entry, plugin) = (call.entry, call.plugin);
        let mut rounds = 0;
        loop {
            let asked = match call.unanswered.take() {
                Some(forms) => forms,
                None => {
                    let answer = plugin.get_prompt(&entry.declared_name, &call.arguments, call.input.as_ref());
                    let answer = plugin_call(plugin, metrics::Method::Get, answer, |answer| match answer {
                        Ok(PromptAnswer::InputRequired(_)) => metrics::INPUT_REQUIRED,
                        answer => error::outcome(answer),
                    });
                    match answer.await? {
                        PromptAnswer::Reply(reply) => {
                            let result = plugin.bounded_on_the_wire(&entry.declared_name, convert::reply(reply))?;
                            return Ok(GetPromptResponse::Complete(result));
                        }
                        PromptAnswer::InputRequired(asked) => Forms::from(&asked),
                    }
                }
            };
            if let Asking::InputRequired = asking {
                // The arguments answered through the host's form ride along
                // to the next round, sealed: bounded as a form is.
                input::check_carried(&call.answered, plugin.limits()).map_err(|problem| call.input_error(problem))?;
                return Ok(GetPromptResponse::InputRequired(self.seal.ask(&asked.carrying(&call.answered), &call.binding())));
            }
            rounds += 1;
            if rounds > input::MAX_ELICITATION_ROUNDS {
                return Err(call.input_error(InputError::TooManyRounds));
            }
            let cannot_ask = |why| call.input_error(cannot_ask(entry, &asked, why));
            let responses = self.ask_now(&call.name, asking, &asked, cannot_ask).await?;
            let Answers::Complete(answers) = asked.answers(Some(&responses)).map_err(|problem| call.input_error(problem))? else {
                unreachable!("elicit answers every form");
            };
            check_argument_size(&call.name, &call.arguments, plugin.limits(), input::input_bytes(&answers))?;
            call.input = Some(answers);
        }
    }

    /// Asks the client for `forms` now, as `asking` allows (elicitation
    /// requests on its session, or the `get` command's answers), and returns
    /// its answers; `cannot_ask` says why when it cannot.
    async fn ask_now(
        &self,
        prompt: &str,
        asking: &Asking,
        forms: &Forms,
        cannot_ask: impl FnOnce(&'static str) -> RequestError,
    ) -> Result<InputResponses, RequestError> {
        let input_error = |problem: InputError| RequestError::Input { prompt: prompt.to_string(), problem };
        match asking {
            Asking::Elicitation(session, ends, stream_place) => {
                let _pending = self.elicitations.admit().map_err(input_error)?;
                let _stream = match stream_place {
                    Some(place) => Some((place.take)().map_err(|refusal| input_error(InputError::NoStreamPlace { refusal }))?),
                    None => None,
                };
                let abandoned = futures::future::select_all(ends.iter().map(|end| Box::pin(end.cancelled())));
                let timeout = self.elicitations.limits().timeout;
                input::elicit(session, forms, timeout, async {
                    abandoned.await;
                })
                .await
                .map_err(input_error)
            }
            Asking::Locally(answer) => answer(forms).ok_or_else(|| cannot_ask(GET_CANNOT_ASK)),
            Asking::Cannot(why) => Err(cannot_ask(why)),
            Asking::InputRequired => unreachable!("answered with an InputRequiredResult before asking now"),
        }
    }
}

/// The host's form for `entry`'s `missing` arguments, if its prompt asks
/// for them (a 0.3.1 pack's `asking`).
fn form_for_missing(entry: &Entry, plugin: &Plugin, missing: &[String]) -> Option<Forms> {
    let typed = entry.typed.as_ref().filter(|typed| typed.asks_for_missing)?;
    let prompt = plugin.prompts().iter().find(|prompt| prompt.name == entry.declared_name)?;
    let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
    let form = typed.form_for_missing(prompt, &entry.prompt.name, &missing);
    // Checked at load with the declared name; the served one may be longer.
    if let Err(problem) = prompt_host_kernel::validate::input_required(&form, plugin.limits()) {
        tracing::debug!(prompt = %entry.prompt.name.escape_debug(), problem = %problem.escape_debug(), "no form for the missing arguments");
        return None;
    }
    Some(Forms::for_missing_arguments(&form))
}

struct GetCall<'a> {
    entry: &'a Entry,
    plugin: &'a Plugin,
    principal: &'a Principal,
    /// The prompt's name, as the client sent it.
    name: String,
    /// The client's arguments (the first `sent`), then those answered
    /// through the host's form, then, once checked, the defaults.
    arguments: Vec<model::Argument>,
    sent: usize,
    /// The arguments answered through the host's form, in this round or an
    /// earlier one (carried in the sealed state).
    answered: Vec<model::Argument>,
    /// The answers to the pack's own forms.
    input: Option<model::Input>,
    /// The forms sealed in the state the client sent back, left unanswered.
    unanswered: Option<Forms>,
    /// Whether the client answered the host's form for missing arguments in
    /// this round.
    asked_for_arguments: bool,
}

impl GetCall<'_> {
    /// The prompt's required arguments not among the arguments.
    fn missing(&self) -> Vec<String> {
        self.entry
            .required_arguments()
            .filter(|required| !self.arguments.iter().any(|argument| argument.name == *required))
            .map(str::to_string)
            .collect()
    }

    /// What a state is bound to: the arguments as the client sent them,
    /// which it sends again with every round; what the host adds (answers
    /// to its form, defaults) goes after them. Made only where a state is
    /// opened or sealed: most calls need none.
    fn binding(&self) -> Binding {
        Binding::new(self.principal, self.plugin.digest(), &self.name, &self.arguments[..self.sent])
    }

    fn input_error(&self, problem: InputError) -> RequestError {
        RequestError::Input { prompt: self.name.clone(), problem }
    }

    fn invalid_argument(&self, refused: prompt_host_kernel::arguments::Refused) -> RequestError {
        RequestError::InvalidArgument { prompt: self.name.clone(), refused }
    }

    /// The arguments sized again (with the answers to the pack's forms),
    /// and, for typed arguments (0.3), the defaults filled in and every
    /// declared value checked, before the pack runs.
    fn check_arguments(&mut self) -> Result<(), RequestError> {
        check_argument_size(&self.name, &self.arguments, self.plugin.limits(), 0)?;
        if let Some(typed) = &self.entry.typed {
            typed.apply(&mut self.arguments).map_err(|refused| RequestError::InvalidArgument { prompt: self.name.clone(), refused })?;
        }
        if let Some(answers) = &self.input {
            check_argument_size(&self.name, &self.arguments, self.plugin.limits(), input::input_bytes(answers))?;
        }
        Ok(())
    }
}

/// Why `forms` cannot be asked for (`why`), naming what the prompt needs,
/// and the arguments that would do instead (fields the prompt also takes as
/// arguments: given those, it need not ask).
fn cannot_ask(entry: &Entry, forms: &Forms, why: &'static str) -> InputError {
    let declared: Vec<&str> = entry.prompt.arguments.iter().flatten().map(|argument| argument.name.as_str()).collect();
    let arguments: Vec<String> = forms.field_names().filter(|field| declared.contains(field)).map(|field| format!("{field}=...")).collect();
    let skip = match arguments.len() {
        0 => String::new(),
        1 => format!("; or give the argument {} instead, which skips the form", arguments[0]),
        _ => format!("; or give the arguments {} instead, which skips the forms", arguments.join(" ")),
    };
    InputError::CannotAsk { needed: forms.describe(), why, skip }
}

/// Adds the arguments the user gave through the host's form to the
/// client's, after them: each that the client did not pass itself.
fn add_answered(arguments: &mut Vec<model::Argument>, answered: &[model::Argument]) {
    for argument in answered {
        if !arguments.iter().any(|given| given.name == argument.name) {
            arguments.push(argument.clone());
        }
    }
}
