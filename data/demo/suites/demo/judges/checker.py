# Align one answer sentence per input line to the question's expected claims (ragslice's judge protocol).
import json
import re
import sys

STOP = set("a an and are as at be by for from has have in is it its of on or the to was were with".split())
DECLINES = ("could not find", "do not answer", "can't answer", "cannot answer", "please confirm")


def words(text):
    return {w for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOP}


def numbers(text):
    return set(re.findall(r"\d+(?:[.,]\d+)?", text))


def grade(sentence, text):
    """How far a cited document supports the sentence: full when it holds the sentence's figures and nearly all
    its words, partial when it holds half its words, else none."""
    said, held = words(sentence), words(text)
    share = len(said & held) / len(said) if said else 0.0
    if share >= 0.8 and numbers(sentence) <= numbers(text):
        return "full"
    return "partial" if share >= 0.5 else "none"


def answer(request):
    found = align(request)
    if "documents" in request:  # declared with grades = true: grade each citation too
        found["support"] = [grade(request["sentence"], d["text"]) for d in request["documents"]]
    found["usage"] = {"cost_usd": 0}  # a local program: no tokens, no charge
    return found


def align(request):
    sentence = request["sentence"]
    introduces = sentence.rstrip().endswith(":") and not request["citations"]
    if introduces or any(phrase in sentence.lower() for phrase in DECLINES):
        return {"claim_ids": "no_claim", "confidence": 0.95, "rationale": "introduces, declines or hedges"}
    found = []
    for claim in request["claims"]:
        wanted = words(claim["proposition"])
        share = len(words(sentence) & wanted) / len(wanted) if wanted else 0.0
        if share >= 0.5 and numbers(claim["proposition"]) == numbers(sentence):
            found.append((share, claim["id"]))
    if not found:
        return {"claim_ids": "unlabelled", "confidence": 0.7, "rationale": "no expected claim with the same figures"}
    return {"claim_ids": sorted(c for _, c in found), "confidence": round(max(s for s, _ in found), 2),
            "rationale": "shares the claim's words and figures"}


if __name__ == "__main__":
    for line in sys.stdin:
        print(json.dumps(answer(json.loads(line))), flush=True)
