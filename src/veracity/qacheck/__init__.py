"""QACheck (Pan et al. 2023): question-guided multi-hop fact-checking.

The paper's five modules, and where each lives:

- claim verifier D(c, C), "is the context enough?": `pipeline.QACheck.claim_verifier` (a Yes/No `choose`);
- question generator Q(c, C), the next question: `pipeline.QACheck.question_generator`, parsed by
  `parsing.parse_question`;
- question-answering module A(q) -> (answer, evidence), in the paper's three forms: `qa.RetrieverReader`,
  `qa.ClosedBook`, `qa.ReciterReader` (`qa.QA_MODULES` by name), parsed by `parsing.parse_short_answer`,
  `parsing.parse_closed_book`, `parsing.parse_passage`;
- validator V(c, (q, a), C), "does the pair add useful knowledge?": `pipeline.QACheck.validator` (a Yes/No `choose`);
- reasoner R(c, C), the label and its rationale: `pipeline.QACheck.reasoner`, through the shared
  `veracity.verdicts.reason_then_label`.

Every model call's prompt spec (template, slots, max_tokens, stop, parser) is in `prompts.py`.

`pipeline.QACheck.check` runs the loop; `pipeline` registers `qacheck` and its variants and ablations
(`qacheck-closed-book`, `qacheck-no-validator`, `qacheck-1-iter`, ...) in `veracity.pipeline.REGISTRY`.
"""

from . import steps as steps  # registers the step types of this system
