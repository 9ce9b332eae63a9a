"""What a model's hypothesis may be about (issue 35). Plain Python, table-driven.

A hypothesis (an inference to confirm with the customer) is kept only when it is about what the
messages it cites talk about: it shares a topic with them (`TOPICS`, one named row per topic, or a
place or a trade term both name). Some things are never a hypothesis, whatever the evidence:

- the sensitive personal information of PIPL art. 28 (`SENSITIVE`): criminal records, health,
  religion, ethnicity, sexual orientation, biometrics, financial accounts, precise whereabouts and
  minors — a model guessing at them is exactly what a customer must be protected from;
- claims that a transaction is done (signed, paid, a deposit handed over): that is the business
  state, which a person records, never a guess.

Both tables read the text folded (NFKC, then casefold: ＧＡＹ is gay) and bound English words by
ASCII letters only — Python's `\\b` counts CJK as word characters, so `\\bgay\\b` never matched in
「客户是gay」. The riskiest categories fail closed: a condition is read by its morpheme (…病, …症,
…癌, …炎, …药), a religion or an ethnic group by the whole list of them, so a wording no row names
still falls under one. Having children is household (客户可能有小孩); a child's age, school or health
is a minor's data. A customer's loan or housing fund, planned or running, is financial data (客户打算
用公积金贷款); whether a listing can be financed (客户关心这套房能否贷款) and what the purchase costs
(预算, 首付, 月供) are business. Each row carries its example, and the table tests read every one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from qiwei_site.reading.normalise import fold_compatibility
from qiwei_site.reading.values import PlaceNames, places_in
from qiwei_site.reading.values.vocabulary import BUILT_IN, Vocabulary


class Row(NamedTuple):
    name: str
    label: str  # in Chinese, for the trace and the review queue
    pattern: re.Pattern[str]
    example: str


def _row(name: str, label: str, pattern: str, example: str) -> Row:
    return Row(name, label, re.compile(pattern), example)


def _any(*families: str) -> str:
    """One alternation of word families (each a regex of its own)."""
    return "|".join(f"(?:{family})" for family in families)


def _en(*words: str) -> str:
    """English words, lower case, bounded by ASCII letters only (so they match beside CJK)."""
    return rf"(?<![a-z])(?:{'|'.join(words)})(?![a-z])"


def _folded(text: str) -> str:
    return fold_compatibility(text).casefold()


# A stretch of one clause: what the rows read between two words that belong together.
_CLAUSE = r"[^，。；！？,.;!?\n]"
# A number as a customer writes it, in digits or in Chinese numerals.
_CN_DIGITS = "一二两三四五六七八九十"


# What a customer's words and an inference can both be about. A hypothesis shares a topic with its
# evidence when one row matches both (or both name the same place or trade term). A row names what
# is about its topic and nothing else: a single character that sits in many words (区, 换, 站, 元)
# would make any two sentences share it, so amounts need an amount-like token (八千, 6000, 3千块).
TOPICS: tuple[Row, ...] = (
    _row(
        "budget",
        "预算与价格",
        _any(
            r"预算|价(?:格|位|钱)|[房租报单总均降涨砍讲议高低市底开标]价|性价比|钱|租金|房租|月租|首付|月供",
            r"费用|花费|开销|[中介物业管理服务学团]费|贵|便宜|实惠|划算|优惠|折扣|打折",
            # an amount: 6000, 3.5万, 8k, 八千, 两万五, 一千块, 500元
            r"[0-9][0-9.]*\s*(?:万|千|百|块|元|k|w)(?![a-z])|(?<![0-9])[0-9]{4,}(?![0-9年])",
            rf"[{_CN_DIGITS}几][{_CN_DIGITS}几百千]*[万千]|[{_CN_DIGITS}几百千]+(?:块钱|元(?!旦))|[百千万]块",
            _en(
                "budget[a-z]*", "price[a-z]*", "rent", "rents", "cost[a-z]*", "cheap[a-z]*", "expensive", "afford[a-z]*"
            ),
            r"[$¥£€]\s*[0-9]|[0-9]\s*(?:yuan|rmb|dollars?)(?![a-z])",
        ),
        "预算五千",
    ),
    _row(
        "area",
        "区域与位置",
        _any(
            r"附近|周边|旁边|边上|一带|片区|板块|区域|位置|地段|商圈|沿线|市区|城区|郊区|市中心|近郊|远郊",
            rf"离{_CLAUSE}{{1,10}}近|近(?:一点|一些|点|些)|不远|太远|远(?:一点|一些)",
            _en("area", "areas", "near", "nearby", "close to", "district", "neighbou?rhood", "location", "downtown"),
            _en("suburb[a-z]*", "city cent(?:re|er)"),
        ),
        "想在浦东附近找",
    ),
    _row(
        "commute",
        "通勤与上班",
        _any(
            r"上班|下班|工作|公司|单位|通勤|地铁|公交|调到",
            rf"(?:地铁|公交|火车|高铁|汽车|车)站|站(?:点|台)|[0-9{_CN_DIGITS}]+号线",
            _en("work(?:s|ing)?", "commut[a-z]*", "office", "job", "metro", "subway", "bus", "train", "tube"),
        ),
        "上班方便一点",
    ),
    _row(
        "layout",
        "户型与面积",
        _any(
            r"[一二两三四五六1-6](?:居|室|房)|户型|厅|卫|面积|平米|平方|[0-9]+平|大小|单间|开间|整租|合租",
            r"卧室|主卧|次卧|书房|阳台|厨房",
            _en("bedroom[a-z]*", "studio", "balcon(?:y|ies)"),
        ),
        "想要两居室",
    ),
    _row(
        "household",
        "同住的人",
        _any(
            r"一家|家人|家里|几口|老婆|老公|爱人|父母|爸妈|老人|室友|同住|一个人|独居|两个人",
            _en("family", "wife", "husband", "alone", "roommate[a-z]*"),
        ),
        "一家三口",
    ),
    _row(
        "pets",
        "宠物",
        _any(
            r"宠物|猫|狗|养(?!老|生|育|护|颜|家|成|胃|分|殖|性)",
            r"金毛|泰迪|柯基|哈士奇|拉布拉多|柴犬|比熊|博美|边牧|布偶|英短|美短|鹦鹉|仓鼠|兔子|乌龟|鱼缸",
            _en("pets?", "cats?", "dogs?", "puppy", "kitten"),
        ),
        "希望能养猫",
    ),
    _row(
        "car",
        "车与车位",
        _any(r"(?<!公交)(?<![火列动])车(?!程|站|厢|次|票)|停车|车位", _en("car", "cars", "parking")),
        "小区有车位吗",
    ),
    _row("school", "学校与学区", _any(r"学校|学区|上学|小学|中学|幼儿园", _en("schools?")), "希望有学区"),
    _row(
        "move",
        "入住与搬家",
        _any(
            rf"入住|搬|起租|租期|到期|住进|换房|换{_CLAUSE}{{0,6}}房子|下个月|月底|几号",
            _en("mov(?:e|es|ing)", "move-in", "lease"),
        ),
        "下个月15号之前要入住",
    ),
    _row(
        "floor",
        "楼层与朝向",
        _any(
            r"楼层|层|顶楼|一楼|高层|低层|电梯|朝南|朝北|朝向|[东南西北]向|向阳|南北|通透|采光",
            _en("floor", "floors", "elevator", "lift"),
        ),
        "不考虑顶楼",
    ),
    _row(
        "quiet",
        "环境",
        _any(r"安静|吵|噪音|环境|绿化|小区|配套", _en("quiet", "noise", "noisy")),
        "比较喜欢安静的小区",
    ),
    _row(
        "decoration",
        "装修与家具",
        _any(r"装修|家具|家电|精装|简装|毛坯", _en("furnish[a-z]*")),
        "要精装修的",
    ),
    _row("viewing", "看房", _any(r"看房|看看|带看|约看", _en("viewing")), "周六上午可以看房"),
    _row(
        "after_sales",
        "售后",
        _any(
            # 退 and 换 of goods, not 退休 or 换工作; 修 as a repair, not 装修
            r"退(?!休|租|役|烧|出|伍)|换(?:货|新|码|尺码|颜色|款)|换个?(?:大|小)一?[码号]|换[个一]?(?:颜色|款|尺码|件|双|台)|换(?:吗|么|一下)",
            r"调换|更换|维修|修理|报修|返修|保修|修一下|修好|补发|漏发|发错|售后|质量|坏|破损|故障|瑕疵|次品",
            _en("return[a-z]*", "refund[a-z]*", "repair[a-z]*", "exchange", "broken", "faulty"),
        ),
        "想换个大一码的",
    ),
    _row(
        "study",
        "学习与课程",
        _any(
            r"课|培训|补习|辅导|报名|报班|小班|大班|老师|考试",
            _en("course[a-z]*", "class(?:es)?", "lesson[a-z]*"),
        ),
        "想报个英语培训",
    ),
    _row(
        "travel",
        "出行",
        _any(
            r"旅游|旅行|出行|出游|行程|玩|度假|酒店|机票|航班|[跟报参]团|旅行团|旅游团|团游|团费|自由行",
            _en("trip[a-z]*", "hotel[a-z]*", "flight[a-z]*", "travel[a-z]*"),
        ),
        "想十月份去云南玩",
    ),
)

# China's 56 ethnic groups (国家民委), each read with 族 after it: 汉族, 回族, 维吾尔族 ...
_ETHNIC_GROUPS = (
    "汉|蒙古|回|藏|维吾尔|苗|彝|壮|布依|朝鲜|满|侗|瑶|白|土家|哈尼|哈萨克|傣|黎|傈僳|佤|畲|高山|拉祜|东乡|纳西"
    "|景颇|柯尔克孜|土|达斡尔|仫佬|羌|布朗|撒拉|毛南|仡佬|锡伯|阿昌|普米|塔吉克|怒|乌孜别克|俄罗斯|鄂温克|德昂"
    "|保安|裕固|京|塔塔尔|独龙|鄂伦春|赫哲|门巴|珞巴|基诺"
)
_CHILD = r"孩子|小孩|儿子|女儿|闺女|宝宝|娃|小朋友|子女|孙子|孙女|外孙"
# What makes words about a child a minor's data: the child's age, school, health or identity.
_CHILD_DETAIL = (
    rf"[0-9{_CN_DIGITS}几]+(?:岁|周岁|个月大)|满月|周岁|几岁|多大|年龄|出生"
    rf"|上学|读书|念书|就读|在读|小学|初中|高中|中学|幼儿园|托班|早教|[{_CN_DIGITS}]年级|[初高][一二三]"
    r"|学校|成绩|考试|中考|高考|升学|班主任|补课|生病|发烧|疫苗|过敏|发育|身份证|户口|学籍"
)
_CHILD_EN = r"sons?|daughters?|child|children|kids?|bab(?:y|ies)"
_CHILD_DETAIL_EN = (
    r"school[a-z]*|grade|kindergarten|preschool|primary|nursery|attends|born|age[ds]?"
    r"|[0-9]+[- ]?(?:years?|months?)[- ]old"
)
_AT = f"{_CLAUSE}{{0,8}}"
_AT_EN = f"{_CLAUSE}{{0,24}}"  # the same in English, whose words are longer
_LIVES = r"住|家|地址|公司|单位|上班|工作|宿舍"
_ADDRESS = (
    rf"[0-9]+\s*(?:栋|幢|号楼|单元|弄|号院)|[{_CN_DIGITS}]+号楼|(?:路|街|弄|巷|道|村)[0-9{_CN_DIGITS}百]+号(?!线)"
    r"|(?<![0-9])[0-9]{3,4}\s*室|(?<![0-9])[0-9]{1,3}-[0-9]{1,2}-[0-9]{3,4}(?![0-9])"
)
# How a purchase is financed. A loan or a housing fund (贷款, 房贷, 公积金, 按揭) is the customer's credit
# and account data, planned or running (客户打算用公积金贷款, 客户在还房贷): refused. Whether a listing can
# be financed is a term of the listing, which the agent answers (客户关心这套房能否贷款): a clause that
# asks it of a named listing is not read for the loan. Budget figures, a down payment and a monthly
# payment (首付一百万, 首付三成, 月供不超过八千) are the price of the purchase, not a loan: budget.
_LOAN = r"贷|公积金|按揭"
_LOAN_EN = r"loans?|mortgages?"
_LISTING = r"房子|房源|楼盘|[这那该此]套|[这那该此]房|[二新老]手?房"
_LISTING_EN = r"flat|apartment|house|property|listing|unit|home"
_LISTING_ASKS = (
    rf"(?:{_LISTING}){_CLAUSE}{{0,8}}(?:能否|能不能|可否|可不可以|可以|是否|支持|能|可){_CLAUSE}{{0,6}}(?:{_LOAN})"
    rf"|(?<![a-z])(?:{_LISTING_EN})(?![a-z]){_CLAUSE}{{0,12}}(?<![a-z])(?:qualif(?:y|ies)|eligible|can|could|allows?)"
    rf"(?![a-z]){_CLAUSE}{{0,16}}(?<![a-z])(?:{_LOAN_EN})(?![a-z])"
)
# A loan word in a clause that is not such a question (clauses start at the text or a punctuation mark).
_LOAN_CLAUSE = (
    rf"(?:^|(?<=[，。；！？,.;!?\n]))(?!{_CLAUSE}*?(?:{_LISTING_ASKS})){_CLAUSE}*?"
    rf"(?:{_LOAN}|(?<![a-z])(?:{_LOAN_EN})(?![a-z]))"
)

# PIPL art. 28 (sensitive personal information), and completed transactions: never a hypothesis.
# The order is the precedence: the first row a text falls under names the reason.
SENSITIVE: tuple[Row, ...] = (
    _row(
        "criminal",
        "犯罪记录",
        _any(
            r"犯罪|犯过|犯法|违法|前科|案底|刑事|判刑|被判|判(?:了|过)(?!断)|缓刑|死缓|刑满|服刑|坐牢|坐过牢|入狱|出狱|监狱",
            r"看守所|劳改|劳教|被捕|逮捕|拘留|拘役|被抓|通缉|在逃|取保候审|保释|涉嫌|立案|被起诉|被调查|处罚|罚款",
            r"吸毒|戒毒|贩毒|涉毒|毒品|毒瘾|诈骗|盗窃|偷窃|抢劫|斗殴|赌博|嫖娼|卖淫|走私|洗钱|行贿|受贿|贪污|酒驾|醉驾|肇事逃逸",
            _en("criminal[a-z]*", "crimes?", "convict[a-z]*", "prison[a-z]*", "jail[a-z]*", "arrest[a-z]*"),
            _en(
                "probation", "parole[ds]?", "felon[a-z]*", "dui", "drunk[- ]driving", "drugs", "rehab", "fraud", "theft"
            ),
            _en(r"(?:served|serving|did|doing) time", "behind bars", "incarcerat[a-z]*"),
            _en(r"drug (?:use|user|abuse|addict[a-z]*|test|charges?|offen[cs]es?)", "police record", "on bail"),
        ),
        "客户有犯罪记录",
    ),
    _row(
        "health",
        "健康状况",
        _any(
            # conditions by their morpheme, fail closed (毛病, 症结, 炎热 and 无障碍 are not conditions)
            r"(?<![毛通弊语])病(?!句)|症(?!结)|癌|瘤|炎(?![热夏炎黄])|(?<!选择)(?<!无)障碍(?!物)|残疾|残障|伤残|瘫",
            r"艾滋|乙肝|梅毒|糖尿|血压|血糖|血脂|心脏|哮喘|过敏|湿疹|癫痫|中风|脑梗|心梗|痛风|颈椎|腰椎|失眠",
            r"抑郁|躁郁|双相|精神(?:病|疾病|障碍|分裂|科|问题)|心理(?:疾病|问题|障碍|咨询|治疗|医生)|自闭|孤独症|多动",
            r"唐氏|阿尔茨海默|痴呆|帕金森|截肢|假肢|轮椅|拐杖|助听器|聋|哑|盲人|失明|视障|听障|弱视|近视|色盲",
            r"行动不便|(?:腿脚|腿|腰|膝盖|身体|眼睛|耳朵|视力|胃|肝|肾)(?:也)?不(?:太|大|是很)?(?:好|便|灵|舒服|行)",
            # care, medicine and pregnancy
            r"(?<![芍山火医])药(?![店房])|胰岛素|激素|透析|化疗|放疗|手术|开刀|住院|出院|康复|复健|理疗|复查|门诊|看病|就医|就诊|体检|病房",
            rf"孕|怀{_CLAUSE}{{0,2}}胎|怀(?:了|上)|胎儿|待产|预产期|哺乳期|流产|不育|试管婴儿|坐月子|月子中心",
            rf"(?:眼睛|耳朵){_CLAUSE}{{0,3}}(?:看|听)不(?:见|清)|综合征|疮|疹",
            _en(
                "pregnan[a-z]*", "diseases?", "illness[a-z]*", "ill", "cancer[a-z]*", "tumou?rs?", "hiv", "disab[a-z]*"
            ),
            _en("handicap[a-z]*", "wheelchair[a-z]*", "crutch(?:es)?", "blind", "deaf[a-z]*", "autis[a-z]*", "adhd"),
            _en("dementia", "alzheimer'?s?", "parkinson'?s?", "diabet[a-z]*", "asthma[a-z]*", "allerg[a-z]*"),
            _en("depress[a-z]*", "anxiety disorder", r"mental (?:health|illness|disorder)", "psychiatr[a-z]*"),
            _en("therap(?:y|ist)", "antidepressant[a-z]*", "medication[a-z]*", "meds", "insulin", "chemo[a-z]*"),
            _en(r"expecting (?:a baby|a child|twins)", "maternity"),
            _en("dialysis", "surgery", "hospitali[sz]ed", "in hospital", "stroke", "epilep[a-z]*", "impair[a-z]*"),
        ),
        "客户可能怀孕了",
    ),
    _row(
        "religion",
        "宗教信仰",
        _any(
            r"宗教|信仰|信教|信徒|教徒|教会|教堂|(?:天主|基督|伊斯兰|犹太|印度|东正|摩门|锡克|喇嘛)教|佛教|道教|新教",
            r"基督|耶稣|天主|穆斯林|真主|古兰|圣经|清真|伊斯兰|犹太|锡克|法轮|邪教|无神论",
            r"信(?:佛|主|神|道|耶稣)|(?:拜|念|礼|学)佛|佛经|佛堂|佛像|佛珠|佛祖|佛门|菩萨|皈依|出家|和尚|尼姑|喇嘛|阿訇",
            r"供奉|供着|神像|财神|祭拜|拜神|吃斋|斋戒|斋月|持斋|开斋|祷告|祈祷|做礼拜|(?<![上下这本])礼拜(?![天日一二三四五六])|念经|诵经|烧香|上香|寺庙|受洗|洗礼|牧师|神父|修女",
            _en("religio[a-z]*", "christian[a-z]*", "catholic[a-z]*", "protestant[a-z]*", "muslims?", "islam[a-z]*"),
            _en(
                "buddhis[a-z]*",
                "hindu[a-z]*",
                "jewish",
                "judaism",
                "jews?",
                "sikh[a-z]*",
                "mormon[a-z]*",
                "atheis[a-z]*",
            ),
            _en("church[a-z]*", "mosques?", "synagogues?", "pray[a-z]*", "ramadan", "halal", "kosher", "bible"),
            _en("quran", "koran", "bapti[sz][a-z]*", "evangelical", "priest", "monk", "pastor"),
        ),
        "客户信仰伊斯兰教",
    ),
    _row(
        "ethnicity",
        "民族",
        _any(
            r"(?<!中华)民族(?![路园街宫]|大道|大学|饭店)|族裔|种族|少数民族|回民|维族|藏民|蒙族|白人|黑人|黄种人",
            rf"(?:{_ETHNIC_GROUPS})族(?![箱馆店缸])",  # 水族箱 is a fish tank
            _en("ethnic[a-z]*", "race", "racial", "uy[g]?hurs?", "uighurs?", "tibetans?", "han chinese", "manchu"),
        ),
        "客户是少数民族",
    ),
    _row(
        "sexual_orientation",
        "性取向",
        _any(
            r"同性(?:恋|伴侣|恋人|情侣|婚姻|爱人|对象|夫妻|配偶)|异性恋|双性恋|无性恋|泛性恋|性取向|性向|性倾向|性少数",
            r"同志|拉拉(?!队)|拉子|蕾丝|基佬|搞基|出柜|跨性别|变性|性别认同|酷儿",
            _en("gay[s]?", "lesbian[a-z]*", "lgbt[a-z+]*", "bisexual[a-z]*", "queer", "transgender[a-z]*", "trans"),
            _en("transsexual[a-z]*", "homosexual[a-z]*", "same[- ]sex", r"sexual\s+orientation", "non[- ]?binary"),
        ),
        "客户可能是同性恋",
    ),
    _row(
        "biometrics",
        "生物识别",
        _any(
            r"指纹|人脸|刷脸|面部识别|面容|虹膜|声纹|掌纹|掌静脉|视网膜|步态识别|基因|亲子鉴定",
            _en("fingerprint[a-z]*", r"face\s*id", "face scan[a-z]*", "facial recognition", "iris", "retina[a-z]*"),
            _en("voiceprint[a-z]*", "biometric[a-z]*", "dna", "genetic[a-z]*", r"palm\s*print[a-z]*"),
        ),
        "客户录过指纹",
    ),
    _row(
        "financial_account",
        "金融账户与收入",
        _any(
            r"银行卡|银行账户|银行流水|账户|存款|储蓄|余额|理财|股票|炒股|基金|资产|身家|家底",
            r"负债|欠款|欠债|债务|借款|借钱|欠钱|信用卡|信用记录|信用分|芝麻分|征信|逾期|失信|老赖|破产",
            _LOAN_CLAUSE,
            r"收入|工资|薪水|薪资|薪酬|月薪|年薪|底薪|时薪|奖金|年终奖|月入|年入|日入",
            rf"(?:挣|赚)(?:了|得|到)?{_CLAUSE}{{0,4}}(?:钱|万|千|[0-9])",
            _en(
                r"bank (?:account|card|statement|balance|details|transfer)s?",
                r"credit (?:card|score|record|history|rating)s?",
            ),
            _en("salar(?:y|ies)", "incomes?", "wages?", "paychecks?", "payslips?", "earn(?:s|ed|ing|ings)?", "debts?"),
            _en("savings", "net worth", "bankrupt[a-z]*", "overdue", "in arrears"),
            _en(r"makes?\s+(?:about\s+|around\s+|over\s+)?[$¥£€]?[0-9]"),
        ),
        "客户月薪三万以上",
    ),
    _row(
        "whereabouts",
        "行踪与详细住址",
        _any(
            r"行踪|住址|家庭地址|家住哪|门牌|定位|实时位置|所在位置|几号楼|几单元|出门时间|回家时间|到家时间",
            # when the customer leaves or comes home
            rf"[0-9{_CN_DIGITS}]+点(?:半|钟|多|左右)?{_CLAUSE}{{0,6}}(?:出门|回家|到家|离家|回来)",
            rf"(?:早上|晚上|深夜|凌晨|半夜){_CLAUSE}{{0,6}}(?:出门|回家|到家|离家)",
            rf"每(?:天|晚|早|日|周[一二三四五六日天末]){_CLAUSE}{{0,6}}(?:出门|回家|到家|离家)",
            r"(?:家里|家中|屋里)(?:经常|常常|白天|晚上)?(?:没人|没有人|无人)|不在家|(?:独自|一个人)在家",
            # the customer's home or workplace with numbers (3栋, 8号楼, 2单元, 88弄, 南京西路12号, 1202室,
            # 3-2-1202); a building alone is a listing (客户可能对9号楼感兴趣)
            rf"(?:{_LIVES}){_CLAUSE}{{0,12}}(?:{_ADDRESS})|(?:{_ADDRESS}){_CLAUSE}{{0,6}}(?:{_LIVES})",
            _en(
                "whereabouts",
                r"home address",
                r"(?:lives?|living|stays?) at [0-9]+",
                "gps",
                r"(?:real-?time|live) location",
            ),
            _en(
                r"[0-9]+\s+[a-z]+\s+(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr)",
                r"(?:flat|apt|apartment|suite)\s*#?[0-9]+",
            ),
            _en(
                r"(?:leaves?|leaving|gets?|getting|comes?|coming|returns?|returning)\s+home\s+(?:at|after|before|around|by)"
            ),
            _en(r"(?:nobody|no one|no-one)\s+(?:is\s+)?(?:at\s+)?home", "home alone", "away from home"),
        ),
        "客户每天八点出门",
    ),
    _row(
        "minor",
        "未成年人",
        _any(
            r"未成年|婴儿|新生儿|婴幼儿|幼童|小学生|初中生|高中生|中学生|学龄",
            rf"(?:{_CHILD}){_AT}(?:{_CHILD_DETAIL})|(?:{_CHILD_DETAIL}){_AT}(?:{_CHILD})",
            _en(
                "minors",
                "underage",
                "under 18",
                r"(?:is|are) a minor",
                "infants?",
                "toddlers?",
                "newborns?",
                "teen[a-z]*",
            ),
            _en(rf"(?:{_CHILD_EN}){_AT_EN}(?:{_CHILD_DETAIL_EN})", rf"(?:{_CHILD_DETAIL_EN}){_AT_EN}(?:{_CHILD_EN})"),
        ),
        "客户的孩子在上小学",
    ),
    _row(
        "completed_transaction",
        "已完成的交易（签约、付款）",
        _any(
            # 已经 + a deal's verb: 已经签, 已经把钱转, 已经报名, 已付款
            rf"已(?:经)?(?:把{_CLAUSE}{{1,4}})?(?:签|付|支付|交(?!代|流|通|往|际)|缴|买|购|订|预订|预定|转|汇|下单|成交|报名|入手|租下|过户|办(?:好|了|理))",
            # a deal's verb done: 签了, 付清, 交完, 买下, 租了, 订好, 下了单
            # (not after an intent: 想租下, 可以买下, 一次性付清 are a way to pay, not a payment)
            r"(?<![想要能会])(?<!准备|打算|计划|可以|愿意|希望|考虑|一次|次性)"
            r"(?:签|付|支付|交|缴|缴费|买|购买|订|预订|预定|转账|汇款|租|报名|下单|续费|付款)(?:了|完|好|过|下|清)",
            r"签(?:字|约|署)了|下了单|拍下|入手了|购入|成交了|过户(?:了|完)|办(?:完|好|了)|打(?:了)?款|到账了",
            rf"(?:定金|订金|押金|首付|尾款|全款|房租|学费|团费|货款|费用){_CLAUSE}{{0,2}}(?:已|都)(?:经)?(?:交|付|缴|打|转)",
            _en("signed", "paid", "purchased", "bought", "booked", "enrolled", "subscribed", "wired"),
            _en(r"completed (?:the |a |his |her |their )?(?:purchase|payment|deal|transaction|booking|enrol?ment)"),
            _en(
                r"closed (?:the|a) deal",
                r"deal (?:is |was )?closed",
                r"made (?:the|a) payment",
                r"transferred (?:the )?money",
            ),
            _en(
                r"(?:has|have|had|already) (?:rented|leased|ordered|reserved|put down)",
                r"deposit (?:was|is|has been) paid",
            ),
        ),
        "客户已经签了合同并付清押金",
    ),
)


def topics(text: str, *, places: PlaceNames | None = None, vocabulary: Vocabulary | None = None) -> frozenset[str]:
    """What `text` is about: the `TOPICS` rows it matches, the places it names (`place:<name>`) and the
    trade terms (`term:<word>`)."""
    folded = fold_compatibility(text)
    lowered = folded.casefold()
    found = {row.name for row in TOPICS if row.pattern.search(lowered)}
    found |= {f"place:{place.name}" for place in places_in(folded, places)}
    found |= {f"term:{term.word}" for term in (vocabulary or BUILT_IN).terms_in(folded)}
    return frozenset(found)


def shared_topics(
    hypothesis: str,
    evidence: Iterable[str],
    *,
    places: PlaceNames | None = None,
    vocabulary: Vocabulary | None = None,
) -> frozenset[str]:
    """The topics a hypothesis shares with the words it rests on (empty: it is about something else)."""
    about = topics(hypothesis, places=places, vocabulary=vocabulary)
    said: set[str] = set()
    for words in evidence:
        said |= topics(words, places=places, vocabulary=vocabulary)
    return about & frozenset(said)


def sensitive(text: str) -> Row | None:
    """The first `SENSITIVE` row the text falls under, or None."""
    folded = _folded(text)
    return next((row for row in SENSITIVE if row.pattern.search(folded)), None)


__all__ = ["SENSITIVE", "TOPICS", "Row", "sensitive", "shared_topics", "topics"]
