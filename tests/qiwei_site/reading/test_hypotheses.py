"""What a model's hypothesis may be about (issue 35): the `TOPICS` it shares with its evidence, and
the `SENSITIVE` categories (PIPL art. 28, completed transactions) it may never be about."""

from __future__ import annotations

import pytest

from qiwei_site.reading.extract._common import CJK_RE
from qiwei_site.reading.hypotheses import SENSITIVE, TOPICS, sensitive, shared_topics, topics

# Rows whose own example the code does not read as the row says (each one is reported, not hidden).
_TOPIC_EXAMPLE_FAILS = {}
_SENSITIVE_EXAMPLE_FAILS = {}


def _params(rows, fails):
    for row in rows:
        reason = fails.get(row.name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(row, id=row.name, marks=marks)


# --- the tables ---------------------------------------------------------------------------------


@pytest.mark.parametrize("row", list(_params(TOPICS, _TOPIC_EXAMPLE_FAILS)))
def test_topic_row_example_is_about_its_topic(row):
    # given the row's example / when its topics are read / then the row is one of them
    assert row.name in topics(row.example), sorted(topics(row.example))


@pytest.mark.parametrize("row", list(_params(SENSITIVE, _SENSITIVE_EXAMPLE_FAILS)))
def test_sensitive_row_example_is_caught_by_its_row(row):
    # given the row's example / when it is checked / then this row catches it
    caught = sensitive(row.example)
    assert caught is not None and caught.name == row.name, caught


@pytest.mark.parametrize("rows", [TOPICS, SENSITIVE], ids=["topics", "sensitive"])
def test_hypothesis_rows_have_unique_names_and_chinese_labels(rows):
    # given a table / then every row is named once, labelled in Chinese and shows an example
    names = [row.name for row in rows]
    assert len(names) == len(set(names))
    for row in rows:
        assert CJK_RE.search(row.label), row.name
        assert row.example.strip(), row.name


def test_sensitive_covers_pipl_categories_and_completed_transactions():
    # given the sensitive table / then it names every PIPL art. 28 category and a done deal
    assert {row.name for row in SENSITIVE} >= {
        "criminal",
        "health",
        "religion",
        "ethnicity",
        "sexual_orientation",
        "biometrics",
        "financial_account",
        "whereabouts",
        "minor",
        "completed_transaction",
    }


# --- sensitive: what it catches, and what it leaves alone ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "可能在张江上班",
        "可能已经养猫",
        "预算可能能加到一万",
        "可能是一个人来上海工作",
        "可能比较在意采光",
        "可能看重通勤时间",
    ],
)
def test_customer_service_inference_is_not_sensitive(text):
    # given an ordinary inference about a housing search / then it falls under no sensitive row
    assert sensitive(text) is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("客户好像有高血压", "health"),
        ("客户可能是穆斯林", "religion"),
        ("客户应该已经交了定金", "completed_transaction"),
        ("客户可能有孩子要上学", "minor"),
        ("客户年薪大概五十万", "financial_account"),
    ],
)
def test_sensitive_inference_is_caught(text, name):
    # given a model's guess at a sensitive category / then the right row catches it
    caught = sensitive(text)
    assert caught is not None and caught.name == name, caught


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("customer may be pregnant", "health"),
        ("customer has a criminal record", "criminal"),
        ("customer goes to church", "religion"),
        ("customer earns a high salary", "financial_account"),
        ("customer's son is in second grade", "minor"),
        ("customer signed the lease", "completed_transaction"),
    ],
)
def test_english_sensitive_inference_is_caught(text, name):
    # given the same guesses in English / then the right row catches them
    caught = sensitive(text)
    assert caught is not None and caught.name == name, caught


@pytest.mark.parametrize(
    "text",
    [
        "might work near the office",
        "might have a cat",
        "budget might stretch to 10000",
        "might be living alone",
        # having children is who lives there (household); a child's age, school or health is a minor's data
        "customer has two children",
    ],
)
def test_english_customer_service_inference_is_not_sensitive(text):
    # given an ordinary inference in English / then it falls under no sensitive row
    assert sensitive(text) is None


# Guesses at each category in wordings the first rows did not name (issue 36, H4): each is caught by
# its own row. Written apart from benchmarks/data/hypotheses_fresh36.jsonl.
_CAUGHT = {
    "health": [
        "客户父亲中风后半身不遂",
        "客户常年腰椎间盘突出",
        "客户在吃安眠药",
        "客户母亲眼睛看不见了",
        "客户有先天性心脏病",
        "客户需要定期打胰岛素",
        "客户怀二胎了",
        "客户最近在看心理医生",
        "客户是聋哑人",
        "客户患有红斑狼疮",
        "customer has a chronic illness",
        "customer is recovering from surgery",
        "customer is expecting a baby",
    ],
    "religion": ["客户周日要去教会", "客户是佛教徒", "客户家里供奉财神", "客户信奉真主", "customer observes Ramadan"],
    "ethnicity": [
        "客户是藏族同胞",
        "客户是壮族",
        "客户是满族人",
        "customer is of Tibetan descent",
        "客户来自少数民族家庭",
    ],
    "sexual_orientation": [
        "客户出柜了",
        "客户是双性恋",
        "customer is in a same-sex relationship",
        "customer identifies as non-binary",
        "客户属于LGBT群体",
    ],
    "biometrics": ["客户采集过虹膜", "客户用面容ID解锁", "customer gave a DNA sample", "客户做过亲子鉴定"],
    "financial_account": [
        "客户负债累累",
        "客户信用卡刷爆了",
        "客户有网贷",
        "客户工资卡在工行",
        "客户一个月挣一万五",
        "customer's credit score is low",
        "customer is in debt",
        "customer earns six figures",
    ],
    "whereabouts": [
        "客户住在幸福里小区5号楼302",
        "客户单位在科技园路66号",
        "客户每天早上七点离家",
        "客户周末一般不在家",
        "customer leaves home at 7am",
        "customer lives at 221B Baker Street",
    ],
    "minor": [
        "客户儿子在上初三",
        "客户女儿刚上幼儿园",
        "客户家小孩三岁",
        "客户孩子在读二年级",
        "customer's daughter is in fifth grade",
        "customer's son is 10 years old",
    ],
    "criminal": [
        "客户有过案底",
        "客户曾经被警察拘留",
        "客户因为赌博被抓过",
        "customer served time",
        "customer has a DUI",
    ],
    "completed_transaction": [
        "客户昨天付了定金",
        "客户已经签约",
        "客户刚办完过户",
        "客户已经续费了",
        "客户刚交了三个月房租",
        "customer has already signed the contract",
        "customer paid the first month's rent",
        "customer completed the purchase",
    ],
}


@pytest.mark.parametrize(
    ("text", "name"), [pytest.param(text, name, id=text) for name, texts in _CAUGHT.items() for text in texts]
)
def test_sensitive_wording_is_caught_by_its_category(text, name):
    # given a guess at a sensitive category, worded as a model might / then its own row catches it
    caught = sensitive(text)
    assert caught is not None and caught.name == name, caught


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("客户是gay", "sexual_orientation"),  # \bgay\b never matched beside CJK
        ("客户是Gay", "sexual_orientation"),
        ("客户是ＬＥＳＢＩＡＮ", "sexual_orientation"),  # full width, upper case
        ("客户有ＨＩＶ", "health"),
        ("客户有hiv阳性", "health"),
        ("客户刚做了DNA检测", "biometrics"),
        ("客户每月还mortgage", "financial_account"),
    ],
)
def test_english_word_is_read_beside_cjk_in_any_width_and_case(text, name):
    # given an English word written into Chinese, in any width or case / then its row catches it
    caught = sensitive(text)
    assert caught is not None and caught.name == name, caught


@pytest.mark.parametrize(
    "text",
    [
        # the review's ordinary hypotheses
        "客户可能有小孩",
        "客户预算有限",
        "客户偏好地铁沿线",
        "客户近期要搬家",
        "客户在意采光",
        "客户可能在比较几家",
        "客户对价格敏感",
        # words that sit beside a category's: a place, a week, a price, a roommate, a listing
        "客户比较佛系",
        "客户想在佛山买房",
        "客户礼拜天有空看房",
        "客户心理价位在三百万左右",
        "客户对房价有点焦虑",
        "客户只接受同性室友",
        "客户是上班族",
        "客户家里有个水族箱",
        "客户可能对9号楼感兴趣",
        "客户下个月15号入住",
        "客户想要3室2厅",
        "客户想买一栋别墅",
        "客户想找离药店近的",
        "客户在医药公司上班",
        "客户挑毛病比较多",
        "客户希望月供不超过八千",
        "客户可能希望离医院近一点",
        "customer prefers a central location",
        "customer wants to be near a bank",
        "customer is sick of the noise",
        "customer wants to archive old contracts",
        "customer might have a minor concern about parking",
    ],
)
def test_ordinary_hypothesis_beside_a_sensitive_word_is_not_sensitive(text):
    # given an ordinary inference whose words look like a category's / then no row catches it
    assert sensitive(text) is None, sensitive(text)


@pytest.mark.parametrize(
    ("intended", "done"),
    [
        ("客户打算下周签合同", "客户上周签好了合同"),
        ("客户想一次性付清", "客户已经付清了"),
        ("客户可能想租下这套", "客户已经租下这套"),
        ("客户准备交定金", "客户的定金已经交了"),
        ("customer might want to sign soon", "customer signed yesterday"),
    ],
)
def test_a_deal_intended_is_admissible_but_a_deal_done_is_not(intended, done):
    # given the same deal wanted and done / then only the done one is the business state
    assert sensitive(intended) is None, sensitive(intended)
    caught = sensitive(done)
    assert caught is not None and caught.name == "completed_transaction", caught


@pytest.mark.parametrize(
    ("household", "minor"),
    [
        ("客户家里有两个孩子", "客户大儿子在读高一"),
        ("客户可能带着孩子一起住", "客户的孩子九岁了"),
        ("customer might have kids", "customer's kids attend the local primary"),
    ],
)
def test_having_children_is_household_but_a_childs_age_or_school_is_a_minors_data(household, minor):
    # given a household with children, and a child's age or school
    # when each is checked / then only the child's details are a minor's data
    assert sensitive(household) is None, sensitive(household)
    caught = sensitive(minor)
    assert caught is not None and caught.name == "minor", caught


@pytest.mark.parametrize(
    ("listing", "address"),
    [
        ("客户可能更喜欢6号楼", "客户住6号楼3单元"),
        ("客户想看12栋的房子", "客户家在12栋1801"),
    ],
)
def test_a_numbered_building_is_a_listing_until_the_customer_lives_there(listing, address):
    # given a numbered building named as a listing, and as where the customer lives
    # when each is checked / then only the customer's home is whereabouts
    assert sensitive(listing) is None, sensitive(listing)
    caught = sensitive(address)
    assert caught is not None and caught.name == "whereabouts", caught


@pytest.mark.parametrize(
    "text",
    [
        "客户患有强直性脊柱炎",  # …炎
        "客户有骨质疏松症",  # …症
        "客户得过淋巴瘤",  # …瘤
        "客户有家族遗传病",  # …病
        "客户每天要吃降糖药",  # …药
    ],
)
def test_health_condition_no_row_names_is_caught_by_its_morpheme(text):
    # given a condition that no row lists by name / when it is checked
    # then the health row catches it by the morpheme the condition is named with
    caught = sensitive(text)
    assert caught is not None and caught.name == "health", caught


@pytest.mark.parametrize(
    ("ordinary", "health"),
    [
        ("客户想要有电梯的楼", "客户家里老人坐轮椅"),
        ("客户希望小区里有无障碍坡道", "客户行动不便，要拄拐杖"),
        ("客户想住得离医院近一点", "客户每个月要去医院复查"),
    ],
)
def test_a_wish_about_the_building_is_ordinary_but_the_need_behind_it_is_health(ordinary, health):
    # given the same wish as a listing feature, and the condition that may lie behind it
    # when each is checked / then only the condition is refused
    assert sensitive(ordinary) is None, sensitive(ordinary)
    caught = sensitive(health)
    assert caught is not None and caught.name == "health", caught


@pytest.mark.parametrize(
    "text",
    [
        "客户打算申请商业贷款",
        "客户准备公积金和商贷组合贷",
        "客户还在还上一套的房贷",
        "客户想按揭买",
        "客户的公积金账户余额不多",
        "customer plans to take out a mortgage",
    ],
)
def test_a_customers_loan_or_housing_fund_is_financial_data(text):
    # given how the customer finances a purchase: a loan, planned or running, or the housing fund
    # when it is checked / then it is the customer's credit and account data
    caught = sensitive(text)
    assert caught is not None and caught.name == "financial_account", caught


@pytest.mark.parametrize(
    "text",
    [
        # whether a listing can be financed is a term of the listing
        "客户问这套房子能不能贷款",
        "客户想知道这房子可以贷多少年",
        "客户关心该房源是否支持公积金",
        "customer asked whether the apartment can get a mortgage",
        # the price of the purchase: a budget, a down payment, a monthly payment
        "客户首付大概三成",
        "客户首付预算八十万",
        "客户希望月供在六千以内",
        "客户总价预算三百万",
    ],
)
def test_a_listings_financing_terms_and_the_budget_are_not_financial_data(text):
    # given what the listing allows and what the purchase costs / when it is checked / then it is business
    assert sensitive(text) is None, sensitive(text)


def test_a_listing_question_does_not_cover_a_loan_in_another_clause():
    # given a question about the listing, and the customer's own loan in the next clause
    text = "客户问这套房能不能贷款，自己还欠着车贷"
    # when it is checked / then the customer's loan is refused
    caught = sensitive(text)
    assert caught is not None and caught.name == "financial_account", caught


# --- shared topics ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hypothesis", "evidence", "topic"),
    [
        ("可能在张江上班，看重通勤时间", "我更喜欢地铁附近的，上班方便一点", "commute"),
        ("可能已经养猫", "预算3500左右，希望能养猫", "pets"),
    ],
)
def test_demo_hypothesis_shares_a_topic_with_its_evidence(hypothesis, evidence, topic):
    # given the demo's hypothesis and the message it cites
    # when their shared topics are read / then they share the topic the hypothesis is about
    assert topic in shared_topics(hypothesis, [evidence])


@pytest.mark.parametrize("hypothesis", ["客户是医生", "客户开宝马"])
def test_invented_hypothesis_shares_no_topic(hypothesis):
    # given a hypothesis about something the cited message never mentions
    # when their shared topics are read / then there are none
    assert shared_topics(hypothesis, ["我想在浦东租个两居室，预算八千左右"]) == frozenset()


def test_shared_topics_reads_every_evidence_message():
    # given a hypothesis whose topic only the second cited message mentions
    shared = shared_topics("可能已经养猫", ["我想在浦东租个两居室", "希望能养猫"])
    # then it shares that topic
    assert shared == frozenset({"pets"})


def test_shared_topics_without_evidence_is_empty():
    # given a hypothesis citing nothing / then it shares nothing
    assert shared_topics("可能在张江上班", []) == frozenset()


def test_topics_name_the_places_mentioned():
    # given a message naming a district / then the place is one of its topics
    assert "place:浦东新区" in topics("我想在浦东租个两居室")


@pytest.mark.parametrize(
    ("hypothesis", "evidence", "topic"),
    [
        ("might work near the office", "I want a place near my office", "commute"),
        ("might work near the office", "I want a place near my office", "area"),
        ("may have a cat", "I hope pets are allowed, I have a cat", "pets"),
        ("probably on a tight budget", "my budget is around 5000", "budget"),
        ("might need two bedrooms", "looking for a two bedroom flat", "layout"),
        ("may prefer a quiet area", "somewhere quiet please, no noise", "quiet"),
        ("prefers a high floor", "no ground floor please", "floor"),
        pytest.param("probably works in the city centre", "I work in the city centre", "commute"),
        pytest.param("might be moving next month", "I need to move in next month", "move"),
        pytest.param(
            "might want to live in Pudong",
            "I want to live in Pudong",
            "place:浦东新区",
            marks=pytest.mark.xfail(
                strict=True,
                reason="English place names are not read: places_in finds no place in 'Pudong', so an English "
                "hypothesis about an area shares nothing with the message naming it",
            ),
        ),
    ],
)
def test_english_hypothesis_shares_a_topic_with_its_evidence(hypothesis, evidence, topic):
    # given an English hypothesis and the English message it cites
    # when their shared topics are read / then they share the topic
    assert topic in shared_topics(hypothesis, [evidence]), (sorted(topics(hypothesis)), sorted(topics(evidence)))


@pytest.mark.parametrize("hypothesis", ["customer is a doctor", "customer drives a BMW"])
def test_invented_english_hypothesis_shares_no_topic(hypothesis):
    # given an English hypothesis about something the cited message never mentions
    # when their shared topics are read / then there are none
    assert shared_topics(hypothesis, ["I want a two bedroom flat, budget 8000"]) == frozenset()


# --- shared topics: one character is not a topic (issue 36, L5) ---------------------------------


@pytest.mark.parametrize(
    ("hypothesis", "evidence"),
    [
        ("客户可能住在市区", "我想在浦东新区租房"),  # 区
        ("客户可能看重小区的配套", "我想在朝阳区找"),  # 区
        ("客户可能想换个城市发展", "鞋子能换个尺码吗"),  # 换
        ("客户可能喜欢站在窗边", "最近的地铁站在哪"),  # 站
        ("客户可能元宵节后才有空", "预算两千元"),  # 元
        ("客户可能家里有一块菜地", "一千块以内的有吗"),  # 块
        ("客户可能在万科上班", "预算一万左右"),  # 万
        ("客户可能想修身养性", "这房子要重新装修吗"),  # 修, 养
    ],
)
def test_hypothesis_sharing_only_a_character_with_its_evidence_shares_no_topic(hypothesis, evidence):
    # given a hypothesis and a message that have a character in common and nothing else
    # when their shared topics are read / then there are none
    assert shared_topics(hypothesis, [evidence]) == frozenset(), (sorted(topics(hypothesis)), sorted(topics(evidence)))


@pytest.mark.parametrize(
    ("text", "is_budget"),
    [
        ("预算两千元", True),
        ("八千左右", True),
        ("5k以内", True),
        ("月租4500", True),
        ("一千五百块钱", True),
        ("元宵节以后", False),
        ("万科的房子", False),
        ("千万别顶楼", False),
        ("块头很大", False),
    ],
)
def test_an_amount_needs_an_amount_like_token(text, is_budget):
    # given an amount, or a word that only contains 万, 千, 元 or 块 / when its topics are read
    # then it is about the budget exactly when it is an amount
    assert ("budget" in topics(text)) is is_budget, sorted(topics(text))


@pytest.mark.parametrize(
    ("hypothesis", "evidence", "topic"),
    [
        ("客户月租可能在五千上下", "5000左右的有吗", "budget"),
        ("客户可能想换套大房子", "现在住的小了，想换房", "move"),
        ("客户可能想换个小一码的", "裤子太大了，能换吗", "after_sales"),
        ("客户可能想退货", "收到的杯子坏了", "after_sales"),
        ("客户可能想住陆家嘴附近", "离陆家嘴近一点就行", "area"),
        ("客户可能会带宠物", "我养了一只柯基", "pets"),
    ],
)
def test_hypothesis_about_the_same_thing_still_shares_its_topic(hypothesis, evidence, topic):
    # given a hypothesis and the message it rests on, about the same thing in other words
    # when their shared topics are read / then they share that topic
    assert topic in shared_topics(hypothesis, [evidence]), (sorted(topics(hypothesis)), sorted(topics(evidence)))
