"""The extractive summariser: no model, deterministic, works offline (docs/design.md "The extractive summariser").

It builds the record from the segment's own words:
- title: the source's title (the request's title hint, keeping any " (part n/m)"), unless
  that is itself a path, URL or pasted output; else the first real request, condensed to
  `TITLE_WIDTH` columns — found by skipping shell prompts, banners, paths, URLs, pasted
  logs, stack frames, JSON and code (see `prose.is_noise`), role-play preambles ("You are
  an expert …") and politeness ("can you", "please");
- summary: 2–5 of the document's sentences: what was asked (the first request), what was
  done (the agent's sentences that report changes, naming the files it edited), how it
  ended (the agent's last words about the outcome);
- questions: the user's own questions and requests, in their words, requests turned into
  questions ("Add X" → "How to add X?"); an error the user pasted stands in for "this" in
  "How can I resolve this?";
- atoms: chosen by salience within the segment (`salience`).

It reads the request's blocks; without them (a stored original) it parses the rendered
document with `segments.parse_blocks`. Same document, same record: nothing here depends on
anything but the request. Whatever the input, the record has a title and a summary, so it
always passes `check_answer`. Its records say `summarizer = extractive` and are upgraded
later by `jezero resummarize`.
"""

import re

from library.ingest.segments import parse_blocks
from library.ingest.summarize.base import Summarizer, Summary
from library.ingest.summarize.document import Document
from library.ingest.summarize.prose import (
    FILE_EXTENSIONS,
    condense,
    end_sentence,
    first_upper,
    has_cjk,
    is_narration,
    is_noise,
    short_paths,
    width,
)
from library.ingest.summarize.salience import atoms as salient_atoms
from library.ingest.summarize.salience import distinctive_names, error_atoms, says_fix
from library.ingest.summarize.schema import check_answer

NAME = "extractive"
TITLE_WIDTH = 80
SENTENCE_WIDTH = 240
QUESTION_WIDTH = 150
MAX_QUESTIONS = 6
MIN_QUESTIONS = 3

_PART_RE = re.compile(r"\s*\((part \d+/\d+)\)\s*$")
_URL_RE = re.compile(r"(?<![A-Za-z0-9])(?:https?|ftp)://(?:www\.)?(?P<host>[^/\s?#)\]>，。]+)(?P<path>/[^\s?#)\]>，。]*)?[^\s)\]>，。]*")
# Words that lead into a request without being part of it.
_LEAD_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|hey|hi|hello|also|and|then|now|but|right|alright|great|thanks|yes|no|sorry|"
    r"hmm|anyway|anw|btw|pls|please|kindly|just)\b[\s,.!:;-]*)+", re.IGNORECASE)
_ASK_RE = re.compile(
    r"^(?:(?:can|could|would|will) (?:you|u)(?: please)?(?: help me)?|(?:i|we) (?:want|need|would like) (?:you )?to|"
    r"(?:i|we)['’]d like (?:you )?to|help me(?: to)?|let['’]?s|lets|i want you to|i need you to|please)"
    r"(?:\s+(?:also|just|now|try to|quickly))*\s+", re.IGNORECASE)
_LABEL_RE = re.compile(r"^(?:goal|task|objective|request|problem|issue|todo|bug|ask|question|option|step|phase)"
                       r"(?:\s+[\w.]{1,6})?\**\s*:\s*", re.IGNORECASE)
# Where the request starts inside a sentence that opens with pasted paths or names.
_ASK_INSIDE_RE = re.compile(r"\b(?:i (?:want|need|would like) to|i['’]d like to|can you|could you|please|help me)\b",
                            re.IGNORECASE)
_LEADING_FILES_RE = re.compile(rf"^(?:(?:[\w.-]+\.(?:{FILE_EXTENSIONS})|[\w.-]+/)[\s,]+)+(?=\S)", re.IGNORECASE)
_PREAMBLE_RE = re.compile(r"^(?:you are|you're|act as|acting as|as an? (?:\w+ )?(?:expert|engineer|developer)|"
                          r"i am an?|imagine you)\b", re.IGNORECASE)
_TRIVIAL = frozenset({
    "continue", "go on", "go ahead", "proceed", "next", "ok", "okay", "yes", "no", "y", "n", "thanks", "thank you",
    "thx", "ty", "done", "good", "great", "nice", "cool", "perfect", "sure", "do it", "try again", "retry", "again",
    "keep going", "carry on", "resume", "go", "init", "hello", "hi", "hey", "lgtm", "looks good", "yep", "yup",
    "nope", "please continue", "continue please", "conitnue", "contiune", "start", "stop", "wait", "what", "why",
    "продолжай", "продолжи", "дальше", "да", "нет", "спасибо", "继续", "好的", "好", "谢谢", "続けて", "はい", "ありがとう",
})
# Words that open a question even without its question mark ("what tasks are open"); an
# auxiliary only when a subject follows ("is there …", "do u think …", not "should be …").
_QUESTION_WORDS = frozenset({"what", "why", "how", "whats", "what's", "hows", "how's", "which"})
_AUXILIARIES = frozenset({"is", "are", "does", "do", "can", "could", "should", "would", "did", "was", "were", "has",
                          "have", "will", "isn't", "aren't", "doesn't", "don't", "can't", "won't", "didn't", "any",
                          "am", "whats", "what's", "it's"})
_SUBJECTS = frozenset({"i", "you", "u", "we", "they", "it", "this", "that", "there", "he", "she", "the", "a", "an",
                       "my", "our", "your", "these", "those", "its", "their", "any", "anything", "something",
                       "everything", "all", "one", "someone", "anyone"})
_NOUN_HEADS = frozenset("""
failures failure errors error results issues problems coverage suite cases runs output logs notes summary report
status progress plan roadmap discussion analysis overview options settings configuration setup process flow
""".split())
# Words too general to make a question worth keeping on their own ("How to fix it?").
_GENERIC = frozenset("""
this that these those them they there here what which with about again still going done work works working fine
problem issue thing things part case code goal look like think want need know also just please maybe more some
something anything everything able sure good okay right make does have been will would could should then than
into from your mine ours their when where while well very much many really actually help wait mean okay idea
""".split())
# Other languages: what makes a sentence a question or a request there.
_FOREIGN_QUESTION_RE = re.compile(
    r"[?？]$|吗[。.]?$|呢[。.]?$|为什么|怎么|如何|什么|哪|是否|か[。.]?$|なぜ|どう|何|"
    r"^(?:почему|как|что|где|когда|зачем|какой|какая|какие|можно ли|в чем|нужно ли|есть ли)\b", re.IGNORECASE)
_FOREIGN_REQUEST_RE = re.compile(
    r"请|帮我|需要|要|实现|增加|添加|修复|改成|改为|换成|使用|替换|重写|提取|优化|希望|支持|"
    r"て[。.]?$|てください|して|欲しい|ほしい|たい[。.]?$|ください|"
    r"^(?:\w+(?:и|ите|ай|айте|уй|уйте|ь|ьте|ой|ойте|ни|ните))\b", re.IGNORECASE)
_IMPERATIVES = frozenset("""
add adjust align analyse analyze apply audit automate build bump change check clean cleanup clone combine commit
compare compile complete configure connect continue convert copy create debug define delete deploy describe
design diagnose disable document download draft drop edit enable enhance ensure evaluate explain export extend
extract figure find finish fix format generate get give handle help implement import improve include increase
init initialize insert install integrate intercept investigate keep link list load locate look make map mark
merge migrate modify move optimise optimize organize outline parse patch plan polish port prepare prevent print
profile publish pull push put read rebase rebuild reduce refactor reformat remove rename reorganize repair
replace reproduce resolve restore restructure retry return review revise rewrite run save scan search separate
set setup show simplify sort speed split start stop streamline strip summarise summarize support switch sync
tell test tidy track translate trim troubleshoot try tune turn understand undo unify uninstall update upgrade
use validate verify walk wire wrap write
""".split())
# "continue working on this application": a nudge to go on, not something to ask about later.
_CONTINUE_RE = re.compile(r"(?:please )?(?:continue|keep going|go on|proceed|resume|carry on)\b", re.IGNORECASE)
_POLITE_END_RE = re.compile(r"[\s,]*\b(?:please|pls|thanks|thank you|thx)\W*$", re.IGNORECASE)
_FUTURE_RE = re.compile(r"\b(?:I'll|I will|let me|I'm going to|we'll|next I)\b", re.IGNORECASE)
_FIX_PRONOUN_RE = re.compile(r"^((?:please\s+)?(?:fix|resolve|solve|debug|explain|handle|correct))\s+(?:it|this|that)\b",
                             re.IGNORECASE)
_OBJECT_PRONOUN_RE = re.compile(r"\b(?:this|it|that|these|them)\s*[?？]$", re.IGNORECASE)
_ACTION_VERBS = (
    "added|changed|fixed|updated|created|removed|replaced|renamed|moved|implemented|refactored|rewrote|rewritten|"
    "wrote|written|installed|configured|set up|converted|extracted|split|merged|deleted|introduced|modified|made|"
    "built|ran|committed|pushed|resolved|cleaned|restructured|reorganized|migrated|enabled|disabled|wired|adjusted|"
    "switched|simplified|kept|wrapped")
_ACTION_START_RE = re.compile(rf"(?:{_ACTION_VERBS})\b", re.IGNORECASE)
_ACTION_RE = re.compile(
    rf"\b(?:I(?:'ve| have)?|we(?:'ve| have)?)\s+(?:\w+\s+)?(?:{_ACTION_VERBS})\b"
    rf"|\b(?:has|have) been (?:{_ACTION_VERBS})\b", re.IGNORECASE)
_ACTION_FOREIGN_RE = re.compile(
    r"已经|已|完成了|修改了|添加了|增加了|替换了|实现了|修复了|更新了|创建了|删除了|しました|ました|完了"
    r"|добавил|исправил|обновил|создал|изменил|удалил|реализовал|заменил", re.IGNORECASE)
_OUTCOME_RE = re.compile(
    r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed)?|successful(?:ly)?|works?|working|worked|fixed|resolved|complete[d]?|"
    r"done|green|builds?|compiles?|is now|are now|now (?:works|shows|runs|passes|returns)|no (?:more )?errors?|"
    r"ready|added|written|created|updated|removed|renamed|merged|deployed|released)\b"
    r"|✅|成功|完成|正常|解决|できました|完了|解決|готово|работает|успешно|исправлен",
    re.IGNORECASE)


class ExtractiveSummarizer(Summarizer):
    name = NAME

    def summarize(self, request):
        blocks = [(role, text) for role, text in request.blocks if text and text.strip()]
        if not blocks:
            blocks = parse_blocks(request.document or "")
        record = check_answer(extract(blocks, title_hint=request.title_hint))
        return Summary(record=record, summarizer=NAME, input_tokens=0, output_tokens=0, attempts=1)


def extract(blocks, *, title_hint=None):
    """The record fields (a dict) for `blocks`, a sequence of (role, text)."""
    doc = Document(blocks)
    hint, part = _split_hint(title_hint)
    pairs = error_atoms(doc)
    atoms = salient_atoms(doc, pairs)
    errors = [error["text"] for error, _fix, _user in pairs]
    asked_errors = [error["text"] for error, _fix, talked_about in pairs if talked_about]
    request, asking = first_request(doc)
    if request and asking is not None:
        request = _with_error(request, next((e for e in errors if e.splitlines()[0] in asking.text), None))
    title = _title(hint, request, doc, errors)
    if part:
        title = f"{title} ({part})"
    return {
        "title": title,
        "summary": _summary(doc, request, asking, errors),
        "questions": _filled(_questions(doc, hint, asked_errors), atoms, hint or title, doc),
        "atoms": atoms,
        "project": None,
    }


# -- title --------------------------------------------------------------------------------------

def _split_hint(hint):
    """(the hint without " (part n/m)", "part n/m" or None)."""
    hint = " ".join((hint or "").split())
    match = _PART_RE.search(hint)
    if match:
        return hint[: match.start()].strip(), match.group(1)
    return hint, None


def _title(hint, request, doc, errors):
    if hint and not is_noise(hint) and "://" not in hint:
        return condense(hint, TITLE_WIDTH)
    if request:
        return condense(_as_title(request), TITLE_WIDTH)
    if errors:
        return condense(error_line(_telling(errors)), TITLE_WIDTH)
    for part in doc.parts:
        for kind, sentence in part.sentences:
            if kind != "heading" and not is_narration(sentence) and _words(sentence) >= 3:
                return condense(_as_title(sentence), TITLE_WIDTH)
    if hint:
        return condense(hint, TITLE_WIDTH)
    anything = _any_sentence(doc)
    return condense(_as_title(anything), TITLE_WIDTH) if anything else "Untitled session"


def _any_sentence(doc):
    """The first sentence of the document, whatever it is (last resort), or a tool line."""
    for part in doc.parts:
        for _kind, sentence in part.sentences:
            return sentence
    return next((part.text for part in doc.parts if part.role == "tool"), "")


def _as_title(sentence):
    text = _strip_lead(sentence)
    inside = _ASK_INSIDE_RE.search(text)
    if inside and inside.start() > 0 and re.search(r"[\\/]|\w{25,}", text[: inside.start()]):
        text = text[inside.start():]    # "and this /tmp/a.mp4 i want to copy them …" → "i want to copy them …"
    asked = _ASK_RE.match(text)
    text = _LABEL_RE.sub("", text[asked.end():] if asked else text, count=1)
    if asked and text.endswith(("?", "？")):
        text = text[:-1]                # "can you resolve X?" → "Resolve X"
    text = text.rstrip(" .。!！:：")
    return first_upper(_tidy(text)) or sentence


def _tidy(text):
    """Long paths cut to their last part, URLs to their host or last two path parts."""
    return short_paths(_URL_RE.sub(_short_url, text)).strip()


def _short_url(match):
    parts = [part for part in (match.group("path") or "").split("/") if part]
    return "/".join(parts[-2:]) if parts else match.group("host")


def _strip_lead(text):
    """`text` without leading small talk ("ok so", "please") and leading file mentions
    ("design.md i have created …")."""
    text = _LEAD_RE.sub("", text).strip()
    stripped = _LEADING_FILES_RE.sub("", text)
    return _LEAD_RE.sub("", stripped).strip() if _words(stripped) >= 3 else text


def _words(text):
    return len(text) // 2 if has_cjk(text) else len(text.split())


def _trivial(text):
    plain = re.sub(r"[^\w\s']", "", text.lower()).strip()
    return plain in _TRIVIAL or not plain or _words(text) < 2


def first_request(doc):
    """(sentence, block) of the user's first sentence that asks for something real: not a
    pasted log (already left out of the prose), not a role-play preamble, not "continue",
    and not a line that only introduces what follows ("we get this error:") while a
    better one exists. (None, None) when the user asked nothing."""
    for part in doc.requests:
        fallback = (None, None)
        for kind, sentence in part.sentences:
            if kind == "quote" or _PREAMBLE_RE.match(sentence):
                continue
            stripped = _strip_lead(sentence)
            if _trivial(stripped) or (_words(stripped) < 3 and not has_cjk(stripped)):
                continue
            if sentence.endswith((":", "：")) or sentence.count('"') % 2:
                fallback = fallback if fallback[0] else (sentence, part)
                continue
            return sentence, part
        if fallback[0]:
            return fallback
    return None, None


# -- summary ------------------------------------------------------------------------------------

def _summary(doc, request, asking, errors):
    asked = _asked(request, asking, errors)
    ended = _ended(doc)
    done = _done(doc, exclude={ended} if ended else set())
    if not doc.answers:
        chosen = asked + _document_sentences(doc, exclude=set(asked))
    else:
        chosen = asked + done + ([ended] if ended else [])
    sentences, seen = [], set()
    for sentence in chosen:
        sentence = condense(_tidy(sentence), SENTENCE_WIDTH)
        words = sentence.lower().split(" ", 2)
        if (words[0] in _QUESTION_WORDS or words[0] in _AUXILIARIES and len(words) > 1 and words[1] in _SUBJECTS) \
                and not sentence.endswith(("…", ".", "!", "?")):
            sentence += "?"
        sentence = end_sentence(sentence)
        key = sentence.lower()
        if sentence and key not in seen:
            seen.add(key)
            sentences.append(first_upper(sentence))
        if len(sentences) == 5:
            break
    if sentences:
        return " ".join(sentences)
    for text in (_any_sentence(doc), " ".join(" ".join(part.text for part in doc.parts).split())):
        summary = end_sentence(condense(" ".join(text.split()), SENTENCE_WIDTH))
        if summary.strip(" .。"):
            return summary
    return "The document is empty."


def _asked(request, asking, errors):
    """The first request (without leading file mentions) and, when short, the sentence
    after it in the same block."""
    if not request:
        return [error_line(_telling(errors))] if errors else []
    asked = [_LEADING_FILES_RE.sub("", request) if _words(_LEADING_FILES_RE.sub("", request)) >= 3 else request]
    texts = [sentence for _kind, sentence in asking.sentences]
    n = next((n for n, text in enumerate(texts) if request.startswith(text[:40])), None)
    if n is not None and n + 1 < len(texts) and width(request) < 100:
        follow = texts[n + 1]
        if (not _trivial(follow) and not _PREAMBLE_RE.match(follow) and not follow.endswith((":", "："))
                and width(request) + width(follow) <= SENTENCE_WIDTH):
            asked.append(follow)
    return asked


def _telling(errors):
    """The most telling error: one with its message on the line ("X: message"), not an
    announcement of the lines that follow ("x.cs(165): error test failed:")."""
    return next((error for error in errors if not error_line(error).endswith(":")), errors[0])


def error_line(error):
    """An error atom on one line: a .NET type and its "Message=" line become "Type: message"."""
    lines = error.splitlines()
    if len(lines) > 1 and lines[1].startswith("Message="):
        return f"{lines[0]}: {lines[1][len('Message='):]}"
    return lines[0]


def _with_error(sentence, error):
    """"How can I resolve this?" or "Fix it, then explain" with the error the user pasted in
    place of "this" or "it"."""
    if not error:
        return sentence
    quoted = f"“{condense(error_line(error), 100)}”"
    if _OBJECT_PRONOUN_RE.search(sentence):
        return _OBJECT_PRONOUN_RE.sub(quoted + "?", sentence)
    return _FIX_PRONOUN_RE.sub(lambda m: f"{m.group(1)} {quoted}", sentence, count=1)


def _done(doc, exclude):
    """Up to two of the agent's sentences that report what it changed, in document order."""
    answers = doc.answers
    if not answers:
        return []
    files = [name.rsplit("/", 1)[-1] for name in doc.edited_files]
    late = {part.pos for part in answers[-3:]}
    scored = []
    order = 0
    for part in answers:
        for kind, sentence in part.sentences:
            order += 1
            if kind == "heading" or sentence in exclude or sentence.endswith(("?", "？")):
                continue
            if not 30 <= len(sentence) <= 400 or not (_reports_action(sentence) or says_fix(sentence)):
                continue
            if is_narration(sentence) or _words(sentence) < 6:
                continue
            if _FUTURE_RE.search(sentence) or sentence.endswith((":", "：")):
                continue
            score = 3
            if any(name in sentence for name in files):
                score += 2
            if "`" in sentence:
                score += 1
            if part.pos in late:
                score += 1
            if score >= 3:
                scored.append((score, order, sentence))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [sentence for _score, _order, sentence in sorted(scored[:2], key=lambda item: item[1])]


def _reports_action(sentence):
    """True when the sentence says something was changed ("I added …", "Replaced X with Y",
    "has been updated", "已修复"). Cheap checks first: this runs on every agent sentence."""
    if _ACTION_START_RE.match(sentence):
        return True
    lower = sentence.lower()
    if ("i " in lower or "i've" in lower or "we " in lower or "we've" in lower or "been " in lower) \
            and _ACTION_RE.search(sentence):
        return True
    return not sentence.isascii() and bool(_ACTION_FOREIGN_RE.search(sentence))


def _ended(doc):
    """The agent's last words about the outcome: the last sentence of its last answers that
    says something worked (or failed); else the first plain sentence of its last answer."""
    for part in reversed(doc.answers[-3:]):
        candidates = [sentence for kind, sentence in part.sentences
                      if kind != "heading" and not sentence.endswith(("?", "？", ":", "："))
                      and not is_narration(sentence)
                      and _words(sentence) >= (2 if len(part.sentences) <= 2 else 4)]
        outcome = [sentence for sentence in candidates if _OUTCOME_RE.search(sentence)]
        if outcome:
            return outcome[-1]
    if doc.answers:
        for kind, sentence in doc.answers[-1].sentences:
            if (kind != "heading" and not is_narration(sentence) and _words(sentence) >= 5
                    and not sentence.endswith((":", "：")) and not sentence.startswith("`") and " | " not in sentence):
                return sentence
    return None


def _document_sentences(doc, exclude):
    """For a document with no agent (a note, a task, a mail): its first plain sentences."""
    out = []
    for part in doc.parts:
        if part.role in ("tool", "system"):      # a task's or a mail's header fields
            continue
        for kind, sentence in part.sentences:
            if kind != "heading" and sentence not in exclude and _words(sentence) >= 4:
                out.append(sentence)
                if len(out) == 3:
                    return out
    return out


# -- questions ----------------------------------------------------------------------------------

def _questions(doc, hint, errors):
    """The user's questions and requests as questions: the first two of each request block
    in order, then more from the same blocks, then (while fewer than three) the title hint
    and the errors; near-duplicates dropped; at most six."""
    first, more = [], []
    for part in doc.requests:
        part_errors = [atom for atom in errors if atom.splitlines()[0] in part.text]
        taken = 0
        for kind, sentence in part.sentences:
            if kind in ("quote", "heading") or _PREAMBLE_RE.match(sentence):
                continue
            question = to_question(sentence, part_errors[0] if part_errors else None, first=not taken)
            if question:
                (first if taken < 2 else more).append(question)
                taken += 1
    candidates = first + more
    if len(_unique(candidates)) < MIN_QUESTIONS and hint and not _noun_phrase(hint):
        question = to_question(hint, None, first=False)
        if question:
            candidates.append(question)
    if len(_unique(candidates)) < MIN_QUESTIONS:
        candidates += [f"How to fix “{condense(error_line(error), 100)}”?" for error in errors
                       if not error_line(error).endswith(":")]
    if not candidates:
        # A request in a language whose questions are not recognised here: the user's words.
        request, _part = first_request(doc)
        if request and not _CONTINUE_RE.match(_strip_lead(request)):
            candidates.append(first_upper(condense(_tidy(_strip_lead(request)), QUESTION_WIDTH)))
    return _unique(candidates)[:MAX_QUESTIONS]


def _filled(questions, atoms, subject, doc):
    """At least MIN_QUESTIONS (docs/design.md "The extractive summariser"): when the user asked fewer things, questions about
    what this document holds — its errors, the files it changed, its decisions and
    commands, then its most distinctive names — rather than templates around the title;
    the subject itself comes last."""
    if len(questions) >= MIN_QUESTIONS:
        return questions
    extra = []
    for atom in atoms:
        text = atom["text"]
        if atom["kind"] == "error":
            extra.append(f"How was “{condense(error_line(text), 100)}” fixed?")
        elif atom["kind"] == "fact" and text.startswith("Files changed: "):
            files = [f.strip() for f in text[len("Files changed: "):].split(",") if f.strip() and "…" not in f]
            extra += [f"What was changed in {name}?" for name in files[:2]]
        elif atom["kind"] == "decision":
            extra.append(f"What led to “{condense(text.rstrip('.'), 100)}”?")
        elif atom["kind"] == "command":
            extra.append(f"Why was `{condense(text, 80)}` run?")
    extra += [f"Where does `{name}` come up, and what was done with it?" for name, _score in distinctive_names(doc, 4)]
    subject = _PART_RE.sub("", subject or "").strip().rstrip("?.!")
    if subject:
        extra.append(f"What was done about {subject[:1].lower() + subject[1:]}?")
    return _unique(questions + extra)[:max(MIN_QUESTIONS, len(questions))]


def _noun_phrase(hint):
    """True for a title that names a thing rather than asks for one ("Test failures due to
    …", "Release notes for 2.0"): its second word is a noun that such titles are about."""
    words = hint.lower().split()
    return len(words) > 1 and words[1] in _NOUN_HEADS


def _unique(questions):
    """`questions` without near-duplicates: mostly the same character pairs (a short one
    inside a longer one counts)."""
    out, grams = [], []
    for question in questions:
        key = re.sub(r"[\W_]+", "", question.lower())
        mine = {key[n:n + 2] for n in range(len(key) - 1)} or {key}
        if any(len(mine & other) >= 0.6 * len(mine | other)
               or min(len(mine), len(other)) <= 24 and len(mine & other) >= 0.7 * min(len(mine), len(other))
               for other in grams):
            continue
        grams.append(mine)
        out.append(question)
    return out


def to_question(sentence, error=None, *, first=True):
    """The user's sentence as a question a person might later ask, in their words: a
    question stays one ("what tasks are open" → "What tasks are open?"), a request becomes
    "How to …?"; in another language a question or request stays as written (and the
    block's first sentence always does). None for small talk, statements and fragments."""
    text = _tidy(_strip_lead(_with_error(sentence, error) if error else sentence))
    inside = _ASK_INSIDE_RE.search(text)
    if inside and inside.start() > 0 and re.search(r"[\\/]|\w{25,}", text[: inside.start()]):
        text = text[inside.start():]    # "and this x.mp4 i want to copy them …" → "i want to copy them …"
    text = re.sub(r"\s+([?？])", r"\1", text)
    if _trivial(text) or text.endswith((":", "：")):
        return None
    if has_cjk(text) or _ascii_letters(text) < 0.5:
        # Not English: keep the user's words (a CJK request has no word to turn around).
        if _words(text) < 2 or not (first or _FOREIGN_QUESTION_RE.search(text) or _FOREIGN_REQUEST_RE.search(text)):
            return None
        return condense(text.rstrip("。."), QUESTION_WIDTH)
    text = _LABEL_RE.sub("", text, count=1)
    if _words(text) < 3 or _CONTINUE_RE.match(text):
        return None
    asked = _ASK_RE.match(text)
    if asked:
        rest = text[asked.end():].rstrip(" .!?")
        verb = rest.split(" ", 1)[0].lower()
        if verb in _IMPERATIVES or verb in ("do", "be", "see", "have", "know"):
            return _ask_how(rest)
        return None
    words = re.split(r"[\s,]+", text.lower(), maxsplit=2)
    first_word, second = words[0], words[1] if len(words) > 1 else ""
    base = _base_verb(first_word)
    if base and second not in ("is", "are", "was", "were") and not re.search(r"\b(?:and|or) [a-z]+ing\b", text):
        return _ask_how(base + text[len(first_word):])      # "Setting up X" → "How to set up X?"
    if first_word in _IMPERATIVES and not re.fullmatch(r"\w+ed|is|are|was|were|has|have|had", second):
        return _ask_how(text.rstrip(" .!?"))
    asks = (first_word in _QUESTION_WORDS and (second in _AUXILIARIES or second in ("to", "about", "if", "the")))
    if text.endswith(("?", "？")) or asks or (first_word in _AUXILIARIES and second in _SUBJECTS):
        question = text.rstrip(" .!?？")
        if _words(question) < 4 or not _has_content(question):
            return None
        return first_upper(condense(question, QUESTION_WIDTH)) + "?"
    return None


def _base_verb(word):
    """The imperative a gerund comes from ("setting" → "set", "fixing" → "fix"), or None."""
    if not word.endswith("ing") or len(word) < 6:
        return None
    stem = word[:-3]
    for candidate in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else None):
        if candidate in _IMPERATIVES:
            return candidate
    return None


def _has_content(text):
    """True when `text` names something: a word of four letters or more that is not generic."""
    return any(len(word) >= 4 and word not in _GENERIC for word in re.findall(r"[a-z][\w.-]*", text.lower()))


def _ask_how(request):
    request = _POLITE_END_RE.sub("", request.strip().rstrip(" .!?"))
    if _words(request) < 2 or not _has_content(request.split(" ", 1)[1]):
        return None
    return f"How to {condense(request[:1].lower() + request[1:], QUESTION_WIDTH - 8)}?"


def _ascii_letters(text):
    letters = [c for c in text if c.isalpha()]
    return sum(1 for c in letters if c.isascii()) / len(letters) if letters else 0.0
