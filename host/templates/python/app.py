"""The {{name}} prompt pack, in Python. componentize-py turns it into
{{name}}.wasm against wit/prompt-provider.wit, WIT 0.4, world
prompt-pack-with-content; `python -m unittest` runs test_app.py natively (see
README.md). The templates come from prompt_pack.py, the same API as the
Rust SDK's."""

from prompt_pack import include_skills, optional, pack, required, template

# componentize-py exports the classes PromptProvider, Asking and Content of
# this module: pack() builds them.
PromptProvider, Asking, Content = pack(
    # What the pack says it is: `prompt-host inspect` shows it. (authors,
    # license, homepage and repository may be given too.)
    name="{{name}}",
    version="0.1.0",
    description="Prompts that {{name}} provides",
    # A pack sees nothing of the machine. It may ask to see a folder (read
    # with open("/logs/...")), call an origin or read a value (os.environ),
    # which the operator grants in [plugins.NAME.grants]:
    #   wants=Wants(folders=[WantedFolder(name="logs", description="...")], origins=[], env=["API_TOKEN"]),
    # (from wit_world.exports.prompt_provider import Wants, WantedFolder).
    templates=[
        template("summarize", "Asks for a summary of a text")
        .title("Summarize text")
        # Left out, the text is asked for: the host shows the user a form
        # (this prompt is named in asks_for_missing below).
        .argument(required("text", "The text to summarize"))
        # One of three, short unless given: the host checks and completes it.
        .argument(optional("length", "How long the summary is").choice(["short", "medium", "long"]).default("short"))
        .user("Write a {length} summary of this text:\n\n{text}"),
        # More: .assistant("..."), .resource(uri, mime_type, text), .link(uri, name),
        # .described("..."); .reply_with(lambda args: reply([user_text(...)])) for a
        # reply written in code, .complete_with(lambda argument, typed: [...]).
    ],
    # The prompts whose missing required arguments the host asks the user for.
    asks_for_missing=["summarize"],
    # The skills the pack carries, for agents that load skills: every file
    # of the skills/ folder beside this one, read when the pack is built.
    skills=include_skills(),
)
