"""The meaning classes the clause reader knows (``clauses``): for each condition that inflates a figure,
the kinds of wording that state it, in English, Chinese and Japanese; the benign statements that leave a
figure quotable; and the words that say nothing about how a figure was produced.

Each class is written as what it means, not as one page's phrase: a prompt that asks to count, list,
print, echo, repeat, copy or recite; best, max, peak, fastest, top, cherry-picked, "of N tries"; bursts and
outputs of 64 tokens or fewer; sums, totals, aggregates, parallel requests, batches and concurrent users;
acceptance as a rate, a percentage, a ratio or counts; loops and degenerate output; warm or hit caches;
estimates and projections; fewer experts, pruned or skipped layers, a KV cache below 8 bit, lenient
acceptance. Numbers inside a clause are checked where the meaning depends on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

I = re.I


def _n(s: str) -> float | None:
    try:
        return float(s.replace(",", "").replace("%", "").replace(" ", "").replace("k", "000").replace("K", "000"))
    except (ValueError, AttributeError):
        return None


@dataclass
class Condition:
    kind: str
    rule: str
    severity: str
    pattern: re.Pattern
    says: str                       # what the clause states, in words (the flag's evidence sentence)
    check: Callable[[re.Match, str], bool] | None = None
    negatable: bool = True
    severity_fn: Callable[[re.Match, str], str] | None = None

    def severity_of(self, m: re.Match, text: str) -> str:
        return self.severity_fn(m, text) if self.severity_fn else self.severity

    def describe(self, m: re.Match, text: str) -> str:
        return self.says.format(hit=m.group(0).strip(), **{k: v for k, v in m.groupdict().items() if v})


def _c(kind, rule, severity, pattern, says, **kw) -> Condition:
    return Condition(kind, rule, severity, re.compile(pattern, I), says, **kw)


# -- numbers a meaning depends on -------------------------------------------------------------------
def _tokens_small(m: re.Match, text: str) -> bool:
    n = _n(m.group("n") or "")
    return n is not None and 0 < n <= 64


def _many(m: re.Match, text: str) -> bool:
    n = _n(m.group("n") or "")
    return n is not None and n > 1


def _full_rate(m: re.Match, text: str) -> bool:
    v = _n(m.group("v") or "")
    if v is None:
        return False
    if v > 1.0:
        v = v / 100.0
    return 0.99 <= v <= 1.0


def _full_counts(m: re.Match, text: str) -> bool:
    a, b = _n(m.group("a")), _n(m.group("b"))
    return a is not None and b and b > 0 and a / b >= 0.99 and a <= b


def _fewer_experts(m: re.Match, text: str) -> bool:
    return True


# "I repeated the whole thing seven times", "repeated it 4 times": the run was repeated, not the prompt's words
RUN_REPEAT = re.compile(r"\brepeat(?:ed|ing)?\s+(?:the\s+(?:whole\s+thing|pass|run|test|benchmark|measurement|experiment|bench)|"
                        r"it|this|that|each\s+(?:run|test|pass|prompt))\s+(?:\d+|two|three|four|five|six|seven|eight|nine|ten|"
                        r"several|a few)\s*(?:times|x)\b|\b(?:ran|run|did)\s+(?:it|this|the (?:test|bench\w*|pass))\s+(?:\d+|two|three|four|"
                        r"five|six|seven|eight|nine|ten)\s+times\b", I)


def _not_run_repeat(m: re.Match, text: str) -> bool:
    return not RUN_REPEAT.search(text)


# a number that is itself a speed ("one user: 19.5 tok/s", "generates 41.27 tok/s"), not a count
_SPEED_AFTER = re.compile(r"^[\d,]*\.\d|^[\d,]*\s*(?:tok(?:en)?s?\s*/\s*s|t/s|tps|tokens? per second)", I)


_AGG_COUNTS = ("n", "n2", "n3", "n4", "n5", "n6", "n7")   # the count groups of the concurrency pattern below


def _count_not_speed(m: re.Match, text: str, groups: tuple[str, ...]) -> bool:
    for g in groups:
        if m.group(g):
            return not _SPEED_AFTER.match(text[m.start(g):m.start(g) + 24])
    return True


# -- conditions, most severe first ------------------------------------------------------------------
CONDITIONS: list[Condition] = [
    # estimates are not measurements
    _c("estimate", "not_measured", "critical",
       r"\b(estimat\w*|projected|projection|extrapolat\w*|theoretical(?:ly)?|in theory|on paper|back[- ]of[- ](?:the[- ])?envelope"
       r"|napkin|calculated from (?:the )?(?:spec|bandwidth|datasheet)\w*|from (?:the )?spec ?sheet|predicted|simulated"
       r"|should (?:be|get|hit|reach) (?:around|about|roughly|~)|expected to (?:be|hit|reach|get)|not (?:actually )?measured"
       r"|haven'?t (?:actually )?(?:run|measured|tested)|would (?:get|hit|reach|do) (?:around|about|roughly)"
       r"|ballpark|guess(?:timate)?d?)\b|估[计算测]|预[估计测期]|理论[值上]?|推算|按.{0,6}计算|推定|理論値|予測|見込み|試算|概算|想定",
       "the figure is not a measurement: {hit}", negatable=False),
    # replaying proposers and loops
    _c("full_acceptance", "full_acceptance", "critical",
       r"(?:accept\w*|接受率?|采纳率?|受理率?|採択率?|受け入れ率?)[^0-9%]{0,24}?(?:\d+\s*/\s*)?(?P<v>1(?:\.0+)?|0?\.99\d*|99(?:\.\d+)?\s*%|100\s*%)(?![\d.])",
       "an acceptance of {v} was stated", check=_full_rate, negatable=False),
    _c("full_acceptance", "full_acceptance", "critical",
       r"(?P<a>\d[\d,]*)\s*(?:/|of|out of|分之)\s*(?P<b>\d[\d,]*)\s*(?:draft(?:ed)?\s*)?(?:tokens?\s*)?(?:were\s*)?accept\w*"
       r"|accept\w*\D{0,20}?(?P<a2>\d[\d,]*)\s*(?:/|of|out of)\s*(?P<b2>\d[\d,]*)",
       "{hit}: the accepted count equals (or nearly equals) the drafted count",
       check=lambda m, t: _full_counts(m, t) if m.group("a") else (
           _n(m.group("a2")) is not None and _n(m.group("b2")) and _n(m.group("a2")) / _n(m.group("b2")) >= 0.99
           and _n(m.group("a2")) <= _n(m.group("b2"))), negatable=False),
    _c("full_acceptance", "full_acceptance", "critical",
       r"\b(?:all|every|each) (?:of the )?(?:draft(?:ed)?|speculated|proposed) tokens? (?:were |was |got |get )?accepted"
       r"|(?:never|no draft tokens?(?: were)?) rejected|zero rejections?|no rejections?|100 ?% (?:acceptance|accepted)"
       r"|全部(?:被)?接受|全(?:部)?採択|すべて(?:受理|採択|受け入れ)|全て(?:受理|採択)",
       "{hit}", negatable=False),
    _c("repeat_loop", "repeat_loop", "critical",
       r"\b(loop(?:ed|ing|s)?|stuck (?:repeating|in)|(?:got|gets|was|is) stuck|stuck on (?:one|the same|a single|a) (?:line|word|sentence|phrase|token)|repeat(?:ed|ing|s)? (?:itself|the same)|degenerat\w*|attractor"
       r"|gibberish|garbage output|garbled|(?:same|one) (?:line|sentence|phrase|word|paragraph|token)s? (?:over and over|again and again|repeatedly)"
       r"|over and over|repetitive output|output (?:was|is|became) repetitive|cycl(?:e|ing) (?:of|through) the same|broken output|nonsense)\b"
       r"|死循环|循环输出|重复输出|复读|乱码|ループ|同じ(?:文|行|単語|フレーズ)を(?:何度も)?繰り返|壊れた出力|意味不明",
       "the output was a loop or degenerate ({hit})", negatable=False),
    # prompts that make a proposer right
    _c("repetitive_prompt", "repetitive_prompt", "high",
       r"\b(count(?:ing)? (?:from|to|up|down)|count \d+|list(?:ing)? (?:every|all|each)? ?(?:the )?(?:prime )?(?:numbers?|integers|digits|primes)|numbers? (?:from )?\d+ (?:to|through|-) ?\d+"
       r"|(?:write|print|recite|type|output|say|spell)(?:ing)? (?:out )?(?:the )?(?:alphabet|numbers|digits|letters)|alphabet"
       r"|\d+ times|(?:repeat|repetition|copy|echo|recite|parrot)\w* (?:this|the|a|back|after|it|that|same|text|sentence|prompt|paragraph|word|phrase|verbatim)"
       r"|verbatim|copy[- ]paste|same prompt|identical prompt|one prompt (?:repeated|over and over|every time|for all)"
       r"|repeated prompt|prompt repeated|same (?:input|question|request) (?:each|every|repeated|again)|echo(?:ed)? back"
       r"|fibonacci|multiplication table)\b"
       r"|数数|从\s*1\s*数|数到|列出.{0,8}数字|[重复]复.{0,6}(?:这|句|段|文|遍|次)|复述|原样|逐字|字母表|相同的?提示|同一(?:个)?提示|同样的提示|(?:说|写|输出|打印|念|背)\S{0,6}\d+\s*[遍次]"
       r"|数え|1から|\d+まで数|列挙|アルファベット|繰り返(?:し|す|させ)|復唱|そのまま(?:出力|繰り返)|同じプロンプト|\d+回(?:繰り返|書)",
       "the prompt or its output repeats ({hit})", check=_not_run_repeat),
    # best of, peak, max
    _c("best_of", "best_of", "high",
       r"\b(best(?: of| run| result| score| case| number| figure| reading| i (?:got|saw)| seen| observed)?|best-case"
       r"|max(?:imum)?(?: observed| seen| recorded| reached| speed| tok\w*| t/s| reading| value| figure| generation)"
       r"|peak(?:ed)?(?! (?:memory|vram|ram|power|usage|mem|gpu memory|allocation))(?: speed| throughput| rate| tok\w*| t/s| decode| generation| at| value| reading| number)?"
       r"|top (?:run|result|score|speed|reading|number)|fastest(?: run| result| of| i (?:got|saw)| seen| observed| time| attempt| pass| number)?"
       r"|highest(?: (?:i|we) (?:got|saw|saw)| seen| observed| number| value| reading| run| result| figure| of)?|record (?:run|speed|high)"
       r"|cherry[- ]?pick\w*|hand[- ]?picked|lucky run|one good run|if you'?re lucky|at (?:its|the) best"
       r"|(?:took|kept|picked|used|chose|reported) the (?:best|fastest|quickest|highest|top|max\w*)|quickest (?:one |run )?of (?:the )?(?:\d+|two|three|four|five|six|seven|eight|nine|ten)|(?:best|fastest|highest) (?:\w+ ){0,2}of \d+)\b"
       r"|最高|最快|峰值|最佳|最好(?:的|成绩|结果)?|取最|挑选|巅峰|ピーク|最速|ベスト|最良|一番(?:速|良)",
       "the figure is a best or peak value ({hit})",
       check=lambda m, t: not re.search(r"(?:\bmin\w*\b[^,;]{0,20}\bmax\b|slowest and fastest|fastest and slowest|within \d|±|spread|range"
                                        r"|spanning|variation|wobble|differ\w* by|no two runs|最大(?:与|和|と)最小|差值?|ばらつき|誤差)", t, I)
       or bool(re.search(r"\b(?:best|peak|cherry|top run)\b", m.group(0), I))),
    # short outputs and bursts
    _c("short_output", "short_shape", "high",
       r"\b(burst\w*|first (?P<n1>\d+) (?:new |output |generated )?tokens|(?:only|just) (?:the )?first (?P<n2>\d+)|short (?:output|generation|reply|replies|answer|completion|run)s?"
       r"|(?:a )?(?:few|handful of) tokens|one[- ]liner)\b|前\s*(?P<n3>\d+)\s*个?\s*token|突发|短(?:输出|回复|生成)|最初の\s*(?P<n4>\d+)\s*トークン|バースト|短い(?:出力|応答|生成)",
       "the figure covers a burst or a short output ({hit})"),
    _c("short_output", "short_shape", "high",
       r"(?:(?:max(?:imum)?[_ -]?(?:new[_ -])?tokens|n[_-]predict|max[_ -]?len(?:gth)?|num[_ -]?predict|-n|tg|output(?: length| len)?|generat\w*|produc\w*|capped at|limited to|stopp?\w* (?:at|after)|only|just)"
       r"\s*[=:]?\s*(?:of |at |to |was |is )?(?P<n>\d[\d,]*)\s*(?:new |output |generated |completion )?(?:tokens?|toks?)?(?!\s*(?:k|tok/s|t/s|tokens?/s|tokens? per|%|ms|x|gb|b\b))"
       r"|(?P<n5>\d+)[\s-]*(?:new |output |generated |completion )?tokens? (?:of output|output|generated|only|max|long|each|completions?|repl(?:y|ies)|answers?|responses?|outputs?|generations?|per (?:request|reply|answer|run|prompt))"
       r"|\beval count\s*[:=]\s*(?P<n8>\d+)\s*tokens?"
       r"|(?:生成|输出)\s*(?P<n6>\d+)\s*个?\s*token|(?P<n7>\d+)\s*トークン(?:だけ|のみ|出力|生成))",
       "{hit}: 64 generated tokens or fewer",
       check=lambda m, t: any(0 < (_n(m.group(g) or "") or 0) <= 64 and not _SPEED_AFTER.match(t[m.start(g):m.start(g) + 24])
                              for g in ("n", "n5", "n6", "n7", "n8") if m.group(g)), negatable=False),
    # aggregates
    _c("aggregate", "aggregate_as_single_stream", "high",
       r"\b(aggregate\w*|total (?:throughput|across|over|for all|of all|output|tok\w*|speed)|combined|summed|sum (?:of|over|across)|in total"
       r"|across (?:all )?(?P<n1>\d+|several|many|multiple|all) (?:users|streams|requests|clients|sequences|sessions|prompts|slots|gpus? (?:in parallel)?)"
       r"|system(?:-wide)? throughput|server(?:-wide)? throughput|whole server|all (?:users|streams|requests) together|overall throughput"
       r"|(?:parallel|concurrent|simultaneous|batched) (?:requests|users|streams|clients|sequences|sessions|slots|decoding|generation)"
       r"|(?:while )?serving (?:\d+|several|many|multiple) (?:users|clients|requests))\b"
       r"|总(?:吞吐|计|和|输出)|合计|聚合|累计|全部用户|多(?:个)?(?:用户|请求|并发)|合計|総(?:スループット|計)|全体スループット|同時(?:アクセス|リクエスト|ユーザー)(?!\s*[:：=]?\s*1(?![\d.]))|集計|並列(?:リクエスト|処理|生成)",
       "the figure sums several requests ({hit})"),
    _c("aggregate", "aggregate_as_single_stream", "high",
       r"(?:(?:\B-npl|\bnpl)\s*[=:]?\s*(?P<n7>\d+)|\b(?:concurrency|concurrent|(?<!n )(?<!n_)(?<!u)batch(?:[- ]size)?|bs|num[_ -]?prompts?|parallel|-np|--parallel|n[_-]parallel|users?|streams?|clients?|sequences|slots|max[_-]num[_-]seqs|requests? in flight)\s*[=:]?\s*(?:of\s*)?(?P<n>\d+)"
       r"|(?P<n2>\d+)\s*(?:(?:concurrent|parallel|simultaneous)\s*(?:users|streams|requests|clients|sequences|sessions|slots)|(?:users|streams|clients|slots)\b(?!\s*(?:total|tested|over|in turn|one after))|(?:requests|sequences|prompts) (?:at once|in parallel|concurrently|simultaneously|in flight))"
       r"|(?P<n3>\d+)\s*(?:x|×)\s*(?:concurrent|parallel)|(?:并发|批量|批大小|批次|同時|並列|バッチ)\s*(?:数|大小|サイズ)?\s*[=:：]?\s*(?P<n4>\d+)|(?P<n5>\d+)\s*(?:个)?(?:并发|用户|路)|(?P<n6>\d+)\s*(?:並列|同時|ユーザー))",
       "{hit}: more than one request at a time",
       check=lambda m, t: any((_n(m.group(g) or "") or 0) > 1 for g in _AGG_COUNTS) and _count_not_speed(m, t, _AGG_COUNTS)
       and not re.search(r"(?:gpus?|cards|nodes|tp|tensor)\b", m.group(0), I), negatable=False),
    # warm caches
    _c("warm_cache", "warm_cache", "high",
       r"\b((?:warm|hot|primed|pre-?filled|pre-?warmed|populated)(?:ed)? (?:prefix |prompt |kv |kv-|radix )?cache|cache[sd]? (?:was |were )?(?:warm|hot|hit|primed|reused|already)"
       r"|(?:prefix|prompt|kv|radix)[ -]?cach\w* (?:hit|reuse\w*|warm|on the second|enabled,? same|kept)|cache hits?|hit (?:the |a )?(?:prefix |prompt |kv )?cache"
       r"|(?:cached|reused) (?:prefix|prompt|kv|context|system prompt)|second (?:run|pass|request|attempt|call|time) (?:with|of|on) the same|re-?(?:sent|ran|run|submitted) the same"
       r"|same prompt (?:again|twice|re-?sent|re-?used)|(?:after|following) (?:a |the )?(?:warm[- ]?up|first run)(?!.{0,40}(?:discard|fresh|new|different|unique|excluded|dropped|thrown))"
       r"|without clearing (?:the )?cache|not cleared|cache[_ -]?(?:state|status)\W{0,4}(?:hot|warm|primed|hit))\b"
       r"|缓存命中|命中缓存|热缓存|预热后|缓存已?(?:预热|命中)|复用(?:了)?(?:缓存|前缀)|第二次(?:运行|请求)|キャッシュ(?:ヒット|が効|済み)|ウォーム(?:キャッシュ|アップ後)|2回目(?:の実行|の計測)?",
       "the figure was measured on a warm cache ({hit})",
       check=lambda m, t: not re.search(r"hit rate\s*[:=]?\s*(?:gpu:\s*)?0(?:\.0+)?\s*%", t, I)),
    # settings that compute less
    _c("reduced_compute", "lossy_setting", "high",
       r"\b((?:fewer|reduced|less|lower(?:ed)?) (?:active )?experts|experts?(?: per token)? (?:reduced|lowered|cut|set|dropped) to|top[- ]?k (?:experts? )?(?:reduced|lowered|set) to \d"
       r"|expert_used_count|experts? per tok\w*\s*:\s*\d|num experts per tok\w*\s*:\s*\d|n expert used\s*:\s*\d|override-kv[^ ]*expert|(?:\d+|one|two|four) (?:of|instead of) \d+ experts|pruned|pruning|skip(?:ped|ping)? (?:\d+ )?layers|layer[- ]skip\w*|early[- ]exit"
       r"|(?:kv|k/v|kv-cache|kv cache)[^,;]{0,20}?(?:q[234]_\w+|[234][- ]?bit|int[234]|nvfp4|fp4|mxfp4)|(?:q[234]_\w+|[234][- ]?bit|int[234]|fp4) (?:kv|k/v)"
       r"|-ct[kv]\s+q[234]|cache[-_ ]type[-_ ][kv]\W{0,4}q[234](?:_\w+)?|experts?\s*/\s*tok\w*\s*[:=]\s*\d|lossy|lenient|relaxed|typical[_ -]acceptance|acceptance threshold|top-\d+ acceptance|accept (?:if|when) (?:in|within) (?:the )?top)\b"
       r"|减少?专家|专家\S{0,6}(?:减|降|少)|剪枝|跳[过层]|(?:KV|kv)[^，,；;]{0,10}(?:4|2|3)\s*(?:比特|bit|位)|宽松接受|エキスパート(?:数)?を(?:減|削)|枝刈り|レイヤー(?:を)?スキップ|層をスキップ|(?:KV|kv)[^、,；;]{0,10}(?:4|2|3)\s*(?:ビット|bit)",
       "a setting that computes less or accepts more than the model does ({hit})"),
    # a lower sustained figure stated beside the headline
    _c("steady_state_lower", "headline_above_steady_state", "high",
       r"\b(drops?|dropp(?:ed|ing)|falls?|fell|settles?|settled|slows?(?: down)?|sags?|degrades?|decays?|declines?|tapers?) (?:off )?(?:to|at|around|back to|down to|below) ~?\d"
       r"|(?:sustained|steady[- ]state|long[- ]run|long[- ]context|after warm[- ]?up|once (?:the )?context fills|over (?:a )?long(?:er)? (?:generation|output|run)s?)[^,;]{0,20}?~?\d[\d,.]*\s*(?:tok|t/s|tokens)"
       r"|(?:sustained|steady(?:[_ -]state)?|long[_ -]run)[_ ]?(?:tps|tok_s|tokens_per_s\w*|t_s|speed|rate)?\s*[:=]\s*~?\d"
       r"|(?:only|just) ~?\d[\d,.]*\s*(?:tok/s|t/s|tokens/s) (?:sustained|after|over|once)|thermal(?:ly)? throttl\w*|throttl(?:es|ed|ing)\b"
       r"|降(?:到|至|为)\s*~?\d|稳定(?:在|后)\s*~?\d|持续\s*~?\d|掉到\s*~?\d|(?:に|まで)(?:低下|落ち)|安定(?:して|時)\s*~?\d|持続\s*~?\d",
       "a lower sustained figure is stated beside the headline ({hit})", negatable=False),
]

CONDITIONS.append(_c(
    "clocks", "clocks_or_power", "low",
    r"\b((?:locked|fixed|pinned|raised|boosted) (?:gpu |core |memory )?clocks?|clocks? (?:locked|fixed|pinned|raised|boosted)|overclock\w*|"
    r"(?:raised|increased|unlocked) power (?:limit|target)|power (?:limit|target) (?:raised|increased|unlocked|at \d+\s*%)|-lgc|-lmc|-pl \d+|"
    r"jetson_clocks|maxn\w*|\d+\s*w power mode)\b|锁频|超频|クロック固定|オーバークロック",
    "clocks or power were changed for the run ({hit})"))

# -- words that take a condition back ---------------------------------------------------------------
NEGATION = re.compile(r"(?:\bno(?:t)?\b|\bnever\b|\bwithout\b|\bdisabled?\b|\bcold\b|\bfresh\b|\bnon[- ]?|\bun(?=[a-z])|\bavoid\w*|\bexclud\w*"
                      r"|\bdiscard\w*|\bcleared?\b|\bflush\w*|\bunlike\b|\bisn'?t\b|\bwasn'?t\b|\bweren'?t\b|\bdidn'?t\b|\bnor\b"
                      r"|不|无|没有|未|禁用|关闭|なし|無効|しない|せず|ではない|不使用)\W{0,3}(?:\w+\W+){0,2}$", I)

# -- benign statements --------------------------------------------------------------------------------
BENIGN: list[tuple[str, re.Pattern]] = [(k, re.compile(p, I)) for k, p in [
    ("runs", RUN_REPEAT.pattern),
    ("runs", r"\b(?:slowest and fastest|fastest and slowest|(?:fastest|quickest|slowest)\b[^,;]{0,30}\bwithin \d)[^,;]*"),
    ("kv_8bit", r"\b(?:kv|k/v)[^,;]{0,20}?(?:q8_0|fp8|8[- ]?bit|int8|f16|fp16|bf16)\b|-ct[kv]\s+(?:q8_0|f16)"),
    ("tool_output", r"\b(?:prefix cache hit rate|total duration|load duration|prompt eval (?:count|duration|rate|time)|eval (?:count|duration|rate|time)|sample time|llama_perf\w*|"
                    r"running: \d+ reqs?|waiting: \d+ reqs?|swapped: \d+ reqs?|gpu kv cache usage|cpu kv cache usage|avg (?:prompt|generation) throughput|"
                    r"successful requests|benchmark duration|total input tokens|total generated tokens|request throughput|mean ttft|median ttft|p99 ttft|"
                    r"mean tpot|median tpot|mean itl|median itl|info \d\d-\d\d|loggers\.py|token\(s\)|tokens?/s)"),
    ("engine", r"\b(llama\.cpp|llama-server|llama-cli|llama-bench|llama-speculative|vllm|sglang|ollama|exllama\w*|tabbyapi|tgi|text-generation-inference|"
               r"tensorrt(?:-llm)?|trt-llm|mlx(?:[_-]lm)?|lm ?studio|koboldcpp|llamafile|mistral\.rs|lmdeploy|aphrodite|transformers|candle|ctranslate2|mlc(?:-llm)?|"
               r"unsloth|bartowski|thebloke|mlx-community|lmstudio-community|huggingface|hugging face|qat|dwq|imatrix|blas|openblas|hipblas|cublas)\b"),
    ("runs", r"\b(\d+ repeats|plus or minus|give or take|middle (?:one|run)|typical run|representative run|"
             r"mean|average|avg|median|p50|p90|p95|geomean|std\.?|stdev|std dev|sd|σ|variance|spread|ci|confidence|"
             r"\d+ (?:runs?|passes|trials|repetitions|reps|iterations|samples|measurements|times averaged)|n\s*=\s*\d+|runs?\s*[=:]\s*\d+|averaged|"
             r"(?:min|minimum)\b.{0,20}\b(?:max|maximum)|slowest|quickest|within \d|repeat(?:ed)? \d+ times(?: and averaged)?|-r \d+|reps?\s*=\s*\d+|"
             r"\d+ (?:tries|attempts)|spanning|variation|wobble|differ\w* by|no two runs|run[- ]to[- ]run)\b|±|\+/-|平均|中位数|标准差|次运行|回(?:の)?(?:実行|計測|測定)|ばらつき|中央値|標準偏差"
             r"|最大(?:与|和|と)最小(?:的)?差|(?:最大)?差值|波动|偏差|誤差"),
    ("prompt_set", r"\b(sharegpt|dataset|mt-?bench|alpaca|humaneval|gsm8k|lmsys|arena|wikitext|c4|sonnet|random(?:ly)? (?:sampled|selected|chosen)?|sampled|"
                   r"unique prompts?|different prompts?|distinct prompts?|varied prompts?|mixed prompts?|real (?:chat|user|world)|chat (?:prompts|logs|transcripts)|"
                   r"prompt set|prompts? from|summar\w+|translat\w+|essays?|stor(?:y|ies)|articles?|emails?|code reviews?|coding tasks?|questions?|explain|describe|"
                   r"write (?:a|an) \w+|conversations?|instructions?|rag|documents?|long[- ]form)\b|数据集|真实|随机|摘要|翻译|文章|对话|データセット|要約|翻訳|記事|会話|ランダム"),
    ("output_length", r"\b(?:\d{3,}|[1-9]\d*k)[\s-]*(?:new |output |generated |completion )?tokens?\b|\b(?:max[_ -]?(?:new[_ -])?tokens|n[_-]predict|output(?: length| len)?|tg|-n)\s*[=:]?\s*(?:\d{3,}|[1-9]k)\b|(?:\d{3,})\s*(?:个)?token|\d{3,}\s*トークン"),
    ("context_length", r"\b(?:ctx|context|context[- ]?(?:length|window|size)|n[_-]ctx|-c|max[-_]model[-_]len|prompt(?: length| len)?|input(?: length| len)?|pp|isl|osl)\s*[=:]?\s*(?:of\s*)?\d|\b\d+k?\s*(?:context|ctx|prompt tokens|input tokens)\b|上下文|コンテキスト"),
    ("single_stream", r"\b(single slot|one slot|-np 1|--parallel 1|in flight at a time|one request at a time|no other (?:requests|load|users)|"
                      r"batch(?:[- ]size)?\s*[=:]?\s*(?:of\s*)?1\b|bs\s*=\s*1\b|single[- ](?:user|stream|request|sequence|session|batch)|one (?:user|stream|request at a time|sequence)|"
                      r"concurrency\s*[=:]?\s*1\b|1 (?:user|stream|concurrent)|sequential(?:ly)?|one at a time|no (?:batching|concurrency))\b|单(?:用户|请求|并发|流)|并发\s*1\b|シングル(?:ユーザー|ストリーム)|同時\s*1\b|1ユーザー|単一(?:ユーザー|リクエスト|ストリーム)|バッチ(?:サイズ)?\s*1\b|批(?:大小|量)?\s*1\b"
                      r"|同時リクエスト\s*1\s*件?|顺序执行|依次|逐个|逐次|順番に|一件ずつ"),
    ("sampling", r"\b(temp(?:erature)?|top[_ -]?p|top[_ -]?k|min[_ -]?p|greedy|seed|sampling|sampler|(?:repetition|repeat|presence|frequency)[_ -]penalty|rep[_ -]pen|do[_ -]sample)\b|温度|采样|サンプリング"),
    ("quantization", r"\b(q\d_k(?:_[sml])?|q\d_\d|iq\d\w*|gguf|awq|gptq|exl[23]|fp8|fp16|bf16|int8|w8a8|w4a16|nvfp4|mxfp4|\d(?:\.\d+)?\s*bpw|\d+[- ]?bit (?:weights|quant\w*|model)|quantized|unquantized|full precision)\b|量化|量子化"),
    ("flags", r"(?:^|\s)--?[a-z][\w-]*|\b(flash[- ]?attn\w*|flash attention|fa\s*[=:]?\s*(?:on|1)|cuda graphs?|tensor[- ]parallel\w*|tp\s*[=:]?\s*\d|pipeline[- ]parallel|ngl|offload\w*|mmap|mlock|numa|threads?\s*[=:]?\s*\d|\d+ threads)\b"),
    ("build", r"\b(build|commit|version|release|tag|compiled(?: from source)?|from source|pip install\w*|installed via|wheel|b\d{3,5}|v\d+(?:\.\d+)+|\d+\.\d+\.\d+|[0-9a-f]{7,40}|nightly build \d|docker image|image)\b|版本|バージョン"),
    ("driver", r"\b(compute capability|vmm|ggml_\w+|found \d+ \w+ devices?|drivers?|cuda|rocm|cudnn|nccl|vulkan|metal|opencl|sycl|kernel \d|firmware|bios|amdgpu|nvidia(?:-smi)?|runtime)\b|驱动|ドライバー?|ランタイム|运行时"),
    ("power", r"\b(stock|default (?:clocks?|power|settings|config\w*)|no overclock\w*|power limit|tdp|\d+\s*w\b|watts?|clocks?|undervolt\w*|fan)\b|功耗|默认|定格|デフォルト|電力"),
    ("defaults", r"\b(defaults?|out[- ]of[- ]the[- ]box|as shipped|no tuning|nothing (?:tuned|changed|tweaked)|untuned|untouched|unchanged|unmodified|vanilla|standard (?:settings|config\w*))\b|標準のまま|定格のまま|変更なし|そのまま|未修改|未改动|默认(?:设置|配置|参数)|没有(?:做)?(?:任何)?(?:调优|优化)|未(?:调优|优化)|デフォルト(?:設定|のまま)?|標準設定|チューニング(?:なし|していない)"),
    ("ambient", r"\b(room temperature|ambient|office|afternoon|morning|evening|\d+\s*°?\s*c\b|air[- ]cooled|water[- ]cooled|open[- ]air|case)\b|室温|気温"),
    ("os", r"\b(ubuntu|debian|linux|windows|macos|wsl2?|fedora|arch|docker|kubernetes|container)\b|(?:上|下)で(?:計測|測定|実行)|系统下"),
    ("warmup_discarded", r"\b(warm[- ]?up\w*[^,;]{0,40}(?:discard\w*|excluded|dropped|thrown away|not counted|ignored)|(?:discard\w*|excluded|dropped|ignored)[^,;]{0,30}warm[- ]?up|fresh prompts?|cold (?:start|cache)|cache (?:disabled|off|cleared|flushed)|no (?:prefix |prompt |kv )?cach\w*)\b|预热.{0,6}(?:丢弃|不计)|ウォームアップ.{0,6}(?:除外|破棄)"),
    ("spec_realistic", r"\b(?:mean |avg |average )?accept(?:ed|ance) length\s*[=:]?\s*\d(?:\.\d+)?(?: (?:per|a) (?:step|verify|verification|forward pass))?|\b(?:accept\w*|acceptance)[^0-9]{0,20}(?:0?\.(?:[0-8]\d|9[0-8])\d*|[1-8]?\d(?:\.\d+)?\s*%|9[0-8](?:\.\d+)?\s*%)|\b(?:mean |avg |average )?accept(?:ed|ance)? length\s*[=:]?\s*\d|\b(?:draft|spec(?:ulative)?|eagle\d?|medusa|mtp|ngram|n-gram|lookahead|prompt lookup)\b|接受率|受理率|採択率|投机|推测解码|投機的"),
    ("hardware", r"\b(gpu|cpu|vram|ram|memory|gb|tb|pcie|nvlink|ddr\d|lpddr\d|hbm\d?e?|apple silicon|unified memory|cores?|threads)\b|显存|内存|メモリ"),
    ("measurement", r"\b(measured|benchmark\w*|bench|test(?:ed)?|ran|run|timed|reported|logged|recorded|tool|script|harness|llama-bench|vllm bench|ollama|--verbose|eval rate|tokens? per second|tok/s|t/s|tps|throughput|decode|generation speed|prefill)\b|测试|实测|基准|測定|計測|ベンチ"),
]]

# -- words that say nothing about how a figure was produced ----------------------------------------------
STOPWORDS = frozenset("""
a an the and or of on in at to for with by from as is was were be been being it its this that these those
i we you he she they my our your me us it's i'm i've we've using used use via per each every all some any
model models gpu gpus card cards rig box machine setup system host server engine backend run runs running
ran got get gets getting gave gives result results number numbers figure figures speed speeds rate rates
token tokens tok tps t s second seconds sec secs ms min minute minutes hour hours decode decoding generation
generate generated output outputs input prompt prompts test tests tested testing bench benchmark benchmarks
measured measure measuring measurement measurements reported report here there about around roughly approx
approximately nearly almost just only also still then so than very quite pretty fairly really nice good solid
fine ok okay stable consistent consistently typical typically normal normally usual usually same local locally
home homelab workstation desktop laptop server node nodes single one two three four eight first second
quick check sanity initial new latest current today yesterday recent recently note notes comment comments
remark remarks info details detail setting settings config configuration configured via with without
version v build tag release tok/s t/s tokens/s tokens/sec on-device device devices vs versus like similar
""".split())

# characters of Chinese and Japanese that say nothing by themselves (particles, copulas, counters, "run")
CJK_STOP = frozenset("件込含思考的了在是用和与及或等为以把被将这那个次回遍中上下时后前里也都就很还再已之其每数字值长度固定参没有做任何调优单请求波动"
                     "そうちの出我们你他它这些那些所有一二三四五六七八九十百千万台张块卡机器上面下面时候结果显示大约左右约"
                     "のでにはをがとやもへからまでよりですますしたしてするされたいる为个于对从到"
                     "测试运行实测跑测定実行計測結果速度生成出力输出模型环境设置条件使用版本")

# words a benign clause may hold beside what the benign statements cover: they say nothing about how the
# figure was produced. A word outside this list (and not a name: capitalised, upper-case or with a digit)
# leaves the clause not understood; a word that often carries a condition never passes as harmless.
GENERIC = frozenset("""
about above across after again against ago all almost along already also although always am among amount
another any anything anyway anywhere are around as ask asked at available away back based basically be
because been before began begin behind being below best better between beyond big bit both bring brought
but by call called came can cannot card case cases change changed check checked clean clear clearly close
come comes coming compared compare comparison could couple course current currently day days decent did
different do does doing done down during each earlier early easily easy either else end enough entire
entirely even ever every everything exactly example except expect fair fairly far feel felt few fine
finished for found from full fully gave general generally give given go goes going gone good got great
had half hand happen happened happens has have having help here high higher how however i if in include
included including indeed inside instead into is it item items its itself just keep kept kind know known
large last later least left less let level like likely line lines little long look looked looks lot lots
low lower made main mainly make makes making many may maybe me mean means might mine more most mostly much
must my myself near need needed needs never new next nice no none nor not nothing now number numbers of
off often ok okay old on once one ones only onto open or other others otherwise our ours out over overall
own part particular per perhaps place plus point possible pretty probably put quite rather re real really
reason regular right roughly run said same saw say says see seem seemed seems seen set several should show
showed shown shows side similar simple simply since small so some something sometimes somewhat soon sort
still such sure take taken takes taking than that the their them themselves then there these they thing
things think this those though through throughout thus time times to today together too took total toward
tried true try trying turn turned twice two under until up upon us use used useful uses using usual
usually various very via want was way ways we well went were what whatever when where whether which while
who whole why will with within without work worked working works would yes yet you your
mac studio pc tower laptop desktop workstation server node box rig chip chips silicon board boards card cards
vram ram memory storage disk ssd nvme gpu gpus cpu cpus core cores thread threads unit units device devices
tokens token toks tok tps rate rates speed speeds throughput latency ttft itl tpot time times duration elapsed
prompt prompts request requests response responses reply replies answer answers question questions query
queries task tasks job jobs session sessions conversation conversations message messages chat text texts
word words sentence sentences paragraph paragraphs document documents page pages file files article articles
news story stories essay code coding program programs script scripts function functions library libraries
model models weights weight checkpoint checkpoints variant variants family size sizes param params parameter
parameters layer layers head heads expert experts moe dense quant quants quantized quantization precision
bit bits format formats file gguf safetensors repo repository release releases official community
engine engines backend backends runtime runtimes framework frameworks server servers client clients api
endpoint endpoints port container image images docker kernel kernels driver drivers toolkit
benchmark benchmarks bench test tests tested testing measure measured measuring measurement measurements
result results score scores figure figures value values reading readings number numbers data log logs output
outputs input inputs generation generations generated generate generating decode decoding decoded prefill
eval evaluation evaluated count counts length lengths window context
each per across over under between from to into onto within
gib gb mb mib kb kib tb tib ghz mhz w kw ms us ns sec secs second seconds min mins minute minutes hour hours
pass passes run runs ran running rerun reruns iteration iterations trial trials repetition repetitions round rounds
average averages averaged averaging mean means median medians spread deviation standard std stddev sd iqr range
ranges variance stable steady consistent consistently noise noisy jitter error errors margin margins
fresh unique distinct different varied random sampled sample samples selection selected set sets pool mix mixed
temperature top sampling greedy seed penalty default defaults stock setting settings config configuration options option
untouched unchanged unmodified compiled compile source sources installed install step steps position positions
completion completions generates writes produces does that's reply replies prefix
chat chatting web ui interface frontend browser own app questions instructions office afternoon morning evening
flag flags parameter tuned tuning untuned tweak tweaks nothing anything changed change left kept
driver version versions build builds commit commits tag tagged nightly stable release
room ambient air cooled cooling fan fans case open temperature degrees
linux ubuntu debian windows macos os system systems
started start starting launched launch loaded load loading served serve serving pasted paste posted post shown
show timed timing timings reported tried using ran measured captured recorded logged printed wrote written
answer reply output length long short-form middle typical representative shown below above following previous
""".split())
# stems that often carry a condition: a clause holding one of these is never passed as harmless
TRIGGERS = re.compile(r"^(?:repeat|loop|stuck|same|identic|again|cach|warm|hot|best|max|peak|top|fast|record|burst|short|first|"
                      r"total|sum|combin|aggregat|parallel|concurren|batch|simultan|accept|draft|estimat|expect|theor|project|"
                      r"predict|extrapol|guess|prun|skip|exit|lossy|lenient|relax|sustain|drop|fall|throttl|thermal|degrad|"
                      r"cherry|lucky|echo|copy|recit|alphabet|verbatim|count|cap|limit|only|just|bonus|boost|turbo|overclock|"
                      r"cheat|trick|hack|spec|lookup|replay|attractor|cycl|garbage|gibberish|nonsense|broke)", re.I)

# characters of Chinese and Japanese that often carry a condition: never passed as harmless
CJK_TRIGGERS = frozenset("最重复循环缓存峰并发总合计估预理论跳剪热突接受速快")
NUMBER_WORDS = frozenset("zero one two three four five six seven eight nine ten eleven twelve twenty thirty fifty hundred "
                         "thousand dozen single double triple".split())

# a statistic of the runs ("min 31.0, max 31.8"): a condition only when it is the figure itself
# a spread of runs, both ends named ("lowest 43.3 and highest 44.1", "min 40 / max 44", "worst 40, best 44"):
# statistics, unless the figure quoted is its top end
SPREAD_CLAUSE = re.compile(r"^\s*(?:the\s+)?(?:lowest|min(?:imum)?|worst|slowest)\s*(?:run)?\s*(?:was|of|at)?\s*[:=]?\s*~?(?P<lo>\d[\d,]*(?:\.\d+)?)"
                           r"\s*(?:tok(?:ens)?/s|t/s|tps)?\s*(?:and|/|,|to|-|–)\s*(?:the\s+)?(?:highest|max(?:imum)?|best|fastest)\s*(?:run)?"
                           r"\s*(?:was|of|at)?\s*[:=]?\s*~?(?P<hi>\d[\d,]*(?:\.\d+)?)\s*(?:tok(?:ens)?/s|t/s|tps)?\s*$", re.I)
STAT_CLAUSE = re.compile(r"^\s*(?:max(?:imum)?|min(?:imum)?|peak|best|worst|fastest|slowest)\s*(?:run)?\s*[:=]?\s*~?(?P<v>\d[\d,]*(?:\.\d+)?)\s*"
                         r"(?:tok(?:ens)?/s|t/s|tps|tokens per second)?\s*$", re.I)
